package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// flagSpec describes one flag a tolerant parser understands. Python's argparse, which
// SGLang uses, accepts both "--flag value" and "--flag=value"; the simulator must
// accept both, too, so that a real serve script runs unchanged.
type flagSpec struct {
	// boolean flags take no value (argparse store_true).
	boolean bool
	// optional, when set, is asked whether the token after the first value is a
	// second value of the same flag (the router's "--prefill URL [BOOTSTRAP_PORT]").
	optional func(next string) bool
	set      func(vals []string) error
}

// ExtraFlag is a flag the simulator does not model. It is kept so that the startup
// server_args dump still shows it, as the real engine would.
type ExtraFlag struct {
	Name  string
	Value string // empty for a boolean flag
	Bool  bool
}

// parseTolerant parses args against specs. Unknown flags are collected, not
// rejected: an unknown flag takes the next token as its value unless that token is
// itself a flag, which is how an unknown store_true flag is told apart.
func parseTolerant(args []string, specs map[string]flagSpec) ([]ExtraFlag, []string, error) {
	var extra []ExtraFlag
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "--") || arg == "--" {
			positional = append(positional, arg)
			continue
		}
		name, inline, hasInline := strings.Cut(arg[2:], "=")
		key := strings.ReplaceAll(name, "_", "-")
		spec, known := specs[key]
		if !known {
			ef := ExtraFlag{Name: key}
			switch {
			case hasInline:
				ef.Value = inline
			case i+1 < len(args) && !strings.HasPrefix(args[i+1], "--"):
				i++
				ef.Value = args[i]
			default:
				ef.Bool = true
			}
			extra = append(extra, ef)
			continue
		}
		if spec.boolean {
			val := "true"
			if hasInline {
				val = inline
			}
			if err := spec.set([]string{val}); err != nil {
				return nil, nil, fmt.Errorf("flag --%s: %w", key, err)
			}
			continue
		}
		var vals []string
		if hasInline {
			vals = append(vals, inline)
		} else {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag --%s needs a value", key)
			}
			i++
			vals = append(vals, args[i])
		}
		if spec.optional != nil && i+1 < len(args) && spec.optional(args[i+1]) {
			i++
			vals = append(vals, args[i])
		}
		if err := spec.set(vals); err != nil {
			return nil, nil, fmt.Errorf("flag --%s: %w", key, err)
		}
	}
	return extra, positional, nil
}

func setString(p *string) flagSpec {
	return flagSpec{set: func(v []string) error { *p = v[0]; return nil }}
}

func setStrings(p *[]string) flagSpec {
	return flagSpec{set: func(v []string) error { *p = append(*p, v[0]); return nil }}
}

func setInt(p *int) flagSpec {
	return flagSpec{set: func(v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil {
			return fmt.Errorf("not an integer: %q", v[0])
		}
		*p = n
		return nil
	}}
}

func setFloat(p *float64) flagSpec {
	return flagSpec{set: func(v []string) error {
		f, err := strconv.ParseFloat(v[0], 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v[0])
		}
		*p = f
		return nil
	}}
}

func setDuration(p *time.Duration) flagSpec {
	return flagSpec{set: func(v []string) error {
		d, err := time.ParseDuration(v[0])
		if err != nil {
			return fmt.Errorf("not a duration: %q", v[0])
		}
		*p = d
		return nil
	}}
}

func setBool(p *bool) flagSpec {
	return flagSpec{boolean: true, set: func(v []string) error {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			return fmt.Errorf("not a boolean: %q", v[0])
		}
		*p = b
		return nil
	}}
}
