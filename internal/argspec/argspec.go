// Package argspec declares the arguments a check or action accepts. One Spec
// beside each plug-in's code drives decoding, lint, the JSON Schema and the
// reference docs, so they can never disagree.
package argspec

import (
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is the type of one argument.
type Type string

const (
	String   Type = "string"
	Int      Type = "int"
	Float    Type = "float"
	Bool     Type = "bool"
	Duration Type = "duration"
	// Regex is a string that must compile as a Go regular expression.
	Regex Type = "regex"
	// Shell is a command line. Template values inserted into it are
	// shell-quoted automatically.
	Shell      Type = "shell"
	StringList Type = "list"
	StringMap  Type = "map"
	// RegexMap maps names to regular expressions (e.g. values to extract).
	RegexMap Type = "regex_map"
)

// Arg declares one argument.
type Arg struct {
	Name     string
	Type     Type
	Required bool
	// Default is used when the argument is absent; it has the Go type that
	// Convert produces for Type.
	Default any
	// Enum restricts a string argument to these values.
	Enum []string
	// Min and Max bound an int, float or duration argument, inclusive;
	// each has the Go type that Convert produces for Type.
	Min, Max any
	// Positive requires an int, float or duration argument without a Min
	// to be greater than zero, for counts and pauses where zero means
	// nothing sensible.
	Positive bool
	Doc      string
	// Escape is where template values inserted into the argument land
	// (see EscapeContext); empty means shell for a Shell argument and
	// none otherwise.
	Escape Escape
}

// Spec is the full declaration of a plug-in kind's arguments and outputs.
type Spec struct {
	Name string
	Doc  string
	Args []Arg
	// Outputs is the struct type the plug-in returns as step.Result.Values;
	// its fields with `expr` tags are what `when:` expressions can read, and
	// their `doc` tags document them.
	Outputs reflect.Type
}

// Arg returns the declaration of the named argument.
func (s Spec) Arg(name string) (Arg, bool) {
	i := slices.IndexFunc(s.Args, func(a Arg) bool { return a.Name == name })
	if i < 0 {
		return Arg{}, false
	}
	return s.Args[i], true
}

// ArgNames lists the argument names, for did-you-mean suggestions.
func (s Spec) ArgNames() []string {
	names := make([]string, len(s.Args))
	for i, a := range s.Args {
		names[i] = a.Name
	}
	return names
}

// Values are decoded arguments keyed by name, each of the Go type that
// Convert produces for its declared Type.
type Values map[string]any

// String returns a string, regex or shell argument.
func (v Values) String(name string) string { s, _ := v[name].(string); return s }

// Int returns an int argument.
func (v Values) Int(name string) int { n, _ := v[name].(int); return n }

// Float returns a float argument.
func (v Values) Float(name string) float64 { f, _ := v[name].(float64); return f }

// Bool returns a bool argument.
func (v Values) Bool(name string) bool { b, _ := v[name].(bool); return b }

// Duration returns a duration argument.
func (v Values) Duration(name string) time.Duration { d, _ := v[name].(time.Duration); return d }

// List returns a list argument.
func (v Values) List(name string) []string { l, _ := v[name].([]string); return l }

// Map returns a map or regex_map argument.
func (v Values) Map(name string) map[string]string { m, _ := v[name].(map[string]string); return m }

// Convert turns a raw decoded value (string, int, float64, bool, []any,
// map[string]any as YAML gives them) into the Go type of t.
func Convert(t Type, raw any) (any, error) {
	switch t {
	case String, Shell:
		return scalarString(raw)
	case Regex:
		s, err := scalarString(raw)
		if err != nil {
			return nil, err
		}
		if _, err := regexp.Compile(s); err != nil {
			return nil, fmt.Errorf("invalid regular expression: %w", err)
		}
		return s, nil
	case Int:
		switch x := raw.(type) {
		case int:
			return x, nil
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("want an integer, got %q", x)
			}
			return n, nil
		}
	case Float:
		switch x := raw.(type) {
		case int:
			return float64(x), nil
		case float64:
			return x, nil
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return nil, fmt.Errorf("want a number, got %q", x)
			}
			return f, nil
		}
	case Bool:
		switch x := raw.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("want true or false, got %q", x)
			}
			return b, nil
		}
	case Duration:
		switch x := raw.(type) {
		case time.Duration:
			return x, nil
		case string:
			d, err := time.ParseDuration(strings.TrimSpace(x))
			if err != nil {
				return nil, fmt.Errorf("want a duration like 30s or 5m, got %q", x)
			}
			return d, nil
		case int:
			if x == 0 {
				return time.Duration(0), nil
			}
			return nil, fmt.Errorf("want a duration with a unit like %ds, got the bare number %d", x, x)
		}
	case StringList:
		switch x := raw.(type) {
		case []string:
			return x, nil
		case []any:
			out := make([]string, len(x))
			for i, e := range x {
				s, err := scalarString(e)
				if err != nil {
					return nil, fmt.Errorf("item %d: %w", i+1, err)
				}
				out[i] = s
			}
			return out, nil
		case string:
			return []string{x}, nil
		}
	case StringMap, RegexMap:
		var m map[string]string
		switch x := raw.(type) {
		case map[string]string:
			m = x
		case map[string]any:
			m = make(map[string]string, len(x))
			for k, e := range x {
				s, err := scalarString(e)
				if err != nil {
					return nil, fmt.Errorf("key %s: %w", k, err)
				}
				m[k] = s
			}
		default:
			return nil, fmt.Errorf("want a mapping of names to strings, got %s", describe(raw))
		}
		if t == RegexMap {
			for k, s := range m {
				if _, err := regexp.Compile(s); err != nil {
					return nil, fmt.Errorf("key %s: invalid regular expression: %w", k, err)
				}
			}
		}
		return m, nil
	default:
		return nil, fmt.Errorf("unknown argument type %q", t)
	}
	return nil, fmt.Errorf("want %s, got %s", t, describe(raw))
}

func scalarString(raw any) (string, error) {
	switch x := raw.(type) {
	case string:
		return x, nil
	case int, float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("want a string, got %s", describe(raw))
}

func describe(raw any) string {
	switch raw.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T %v", raw, raw)
}

// Validate checks a converted value against the argument's enum and
// bounds.
func (a Arg) Validate(v any) error {
	if len(a.Enum) > 0 {
		s, _ := v.(string)
		if !slices.Contains(a.Enum, s) {
			return fmt.Errorf("want one of %s, got %q", strings.Join(a.Enum, ", "), s)
		}
	}
	return a.checkBounds(v)
}

func (a Arg) checkBounds(v any) error {
	positive := a.Positive && a.Min == nil
	if !positive && a.Min == nil && a.Max == nil {
		return nil
	}
	if v == nil {
		return fmt.Errorf("want %s, got nothing", a.wanted())
	}
	low, lowBound := a.Min, true
	if positive {
		low, lowBound = reflect.Zero(reflect.TypeOf(v)).Interface(), false
	}
	in := true
	if low != nil {
		c, err := compare(v, low)
		if err != nil {
			return err
		}
		in = c > 0 || (lowBound && c == 0)
	}
	if a.Max != nil && in {
		c, err := compare(v, a.Max)
		if err != nil {
			return err
		}
		in = c <= 0
	}
	if !in {
		return fmt.Errorf("want %s, got %s", a.wanted(), FormatValue(v))
	}
	return nil
}

// compare orders two values of the same numeric Go type. A bound of
// another type than the value is a mistake in a spec, reported rather than
// guessed around.
func compare(v, bound any) (int, error) {
	switch x := v.(type) {
	case int:
		if y, ok := bound.(int); ok {
			return cmp.Compare(x, y), nil
		}
	case float64:
		if y, ok := bound.(float64); ok {
			return cmp.Compare(x, y), nil
		}
	case time.Duration:
		if y, ok := bound.(time.Duration); ok {
			return cmp.Compare(x, y), nil
		}
	}
	return 0, fmt.Errorf("cannot compare %s with the bound %s", describe(v), describe(bound))
}

// wanted names what the bounds allow, e.g. "an int from 2 to 60" or "a
// positive duration".
func (a Arg) wanted() string {
	noun := map[Type]string{Int: "int", Float: "number", Duration: "duration"}[a.Type]
	if noun == "" {
		noun = "value"
	}
	switch {
	case a.Positive && a.Min == nil && a.Max != nil:
		return "a positive " + noun + " of at most " + FormatValue(a.Max)
	case a.Positive && a.Min == nil:
		return "a positive " + noun
	}
	article := "a "
	if noun == "int" {
		article = "an "
	}
	switch {
	case a.Min != nil && a.Max != nil:
		return article + noun + " from " + FormatValue(a.Min) + " to " + FormatValue(a.Max)
	case a.Min != nil:
		return article + noun + " of at least " + FormatValue(a.Min)
	}
	return article + noun + " of at most " + FormatValue(a.Max)
}

// Range describes the argument's bounds for docs and schemas, e.g. "from 2
// to 60", "at least 1" or "positive"; it is empty when there are none.
func (a Arg) Range() string {
	positive := a.Positive && a.Min == nil
	switch {
	case positive && a.Max != nil:
		return "positive, at most " + FormatValue(a.Max)
	case positive:
		return "positive"
	case a.Min != nil && a.Max != nil:
		return "from " + FormatValue(a.Min) + " to " + FormatValue(a.Max)
	case a.Min != nil:
		return "at least " + FormatValue(a.Min)
	case a.Max != nil:
		return "at most " + FormatValue(a.Max)
	}
	return ""
}

// FormatValue renders a converted value the way a runbook would write it:
// durations without trailing zero units (1m, not 1m0s).
func FormatValue(v any) string {
	d, ok := v.(time.Duration)
	if !ok {
		return fmt.Sprint(v)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// WithDefaults returns args with every absent argument set to its declared
// default. The engine fills defaults when it decodes a runbook, but a check
// or action must not misbehave when called with a partial set (a test, an
// ad-hoc call), so each one runs its arguments through here.
func (s Spec) WithDefaults(args Values) Values {
	out := make(Values, len(s.Args))
	for k, v := range args {
		out[k] = v
	}
	for _, a := range s.Args {
		if _, ok := out[a.Name]; !ok && a.Default != nil {
			out[a.Name] = a.Default
		}
	}
	return out
}
