package runbooks

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/yamlnode"
)

var paramTypes = []ParamType{ParamString, ParamInt, ParamDuration, ParamBool, ParamEnum, ParamDeployment, ParamHost}

func paramTypeNames() []string {
	out := make([]string, len(paramTypes))
	for i, t := range paramTypes {
		out[i] = string(t)
	}
	return out
}

// goType is the type a param has in expressions and templates.
func (p *Param) goType() reflect.Type {
	switch p.Type {
	case ParamInt:
		return reflect.TypeFor[int]()
	case ParamDuration:
		return reflect.TypeFor[time.Duration]()
	case ParamBool:
		return reflect.TypeFor[bool]()
	}
	return reflect.TypeFor[string]()
}

// Check reports whether value, given as text, is a valid value of p (its
// type, range, pattern or choices), as a run would decide it; a host or
// deployment is not looked up in any inventory here.
func (p *Param) Check(value string) error {
	_, err := p.convert(value)
	return err
}

// convert parses a param value given as text (CLI, chat, alert label).
func (p *Param) convert(s string) (any, error) {
	switch p.Type {
	case ParamInt, ParamDuration:
		a := p.bounds()
		v, err := argspec.Convert(a.Type, s)
		if err != nil {
			return nil, err
		}
		if err := a.Validate(v); err != nil {
			return nil, err
		}
		return v, nil
	case ParamBool:
		return argspec.Convert(argspec.Bool, s)
	case ParamEnum:
		if !slices.Contains(p.Values, s) {
			return nil, fmt.Errorf("want one of %s, got %q%s", strings.Join(p.Values, ", "), s, yamlnode.DidYouMean(s, p.Values))
		}
		return s, nil
	case ParamDeployment, ParamHost:
		if !nameOK(s) {
			return nil, fmt.Errorf("want a %s name (letters, digits, '.', '_', '-'), got %q", p.Type, s)
		}
		return s, nil
	}
	if p.Secret && s != "" && len(s) < minSecretLen {
		// Said without the value: the error goes where the value must not.
		return nil, fmt.Errorf("a secret value must be at least %d characters long (this one has %d): a shorter one would be hidden wherever its characters occur in what the run shows", minSecretLen, len(s))
	}
	if p.Pattern != "" {
		if ok, _ := regexp.MatchString("^(?:"+p.Pattern+")$", s); !ok {
			if p.Secret {
				return nil, fmt.Errorf("the secret value does not match the pattern %s", p.Pattern)
			}
			return nil, fmt.Errorf("%q does not match the pattern %s", s, p.Pattern)
		}
	}
	if len(s) > 4096 {
		return nil, fmt.Errorf("value is %d bytes long; the limit is 4096", len(s))
	}
	return s, nil
}

// bounds returns an int or duration param's range as an argument
// declaration, so that params and check arguments enforce and word ranges
// alike. A duration param is positive unless its min allows zero: a
// timeout or pause of zero is a mistake far more often than a wish.
func (p *Param) bounds() argspec.Arg {
	a := argspec.Arg{Name: p.Name, Type: argspec.Int, Min: p.Min, Max: p.Max}
	if p.Type == ParamDuration {
		a.Type, a.Positive = argspec.Duration, true
	}
	return a
}

var paramNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func nameOK(s string) bool { return paramNameRE.MatchString(s) }

// ParamError is a problem with the params a run was asked for. The CLI and
// the bot show it to the person who asked.
type ParamError struct {
	Runbook string
	Param   string
	Msg     string
}

func (e *ParamError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("runbook %s: %s", e.Runbook, e.Msg)
	}
	return fmt.Sprintf("runbook %s: param %s: %s", e.Runbook, e.Param, e.Msg)
}

// Param returns the named param.
func (rb *Runbook) Param(name string) *Param {
	for _, p := range rb.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// ResolveParams validates the given params (text, from the CLI, chat or an
// alert) and fills defaults. It returns typed values by name and their
// canonical text form.
func (rb *Runbook) ResolveParams(given map[string]string) (map[string]any, map[string]string, error) {
	names := make([]string, len(rb.Params))
	for i, p := range rb.Params {
		names[i] = p.Name
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		if rb.Param(k) == nil {
			return nil, nil, &ParamError{Runbook: rb.Name, Param: k, Msg: "no such param" + yamlnode.DidYouMean(k, names) + paramList(names)}
		}
	}
	typed, text := map[string]any{}, map[string]string{}
	for _, p := range rb.Params {
		s, ok := given[p.Name]
		if !ok {
			if p.Required {
				return nil, nil, &ParamError{Runbook: rb.Name, Param: p.Name, Msg: "is required" + docSuffix(p.Doc)}
			}
			if !p.HasDef {
				typed[p.Name] = reflect.Zero(p.goType()).Interface()
				text[p.Name] = ""
				continue
			}
			s = p.Default
		}
		if p.Type != ParamString {
			// "-p 'samples= 5'": spaces around a number, a duration, a
			// name are a typing slip, not part of the value, and must not
			// reach a shell command or the record as " 5".
			s = strings.TrimSpace(s)
		}
		v, err := p.convert(s)
		if err != nil {
			return nil, nil, &ParamError{Runbook: rb.Name, Param: p.Name, Msg: err.Error()}
		}
		typed[p.Name], text[p.Name] = v, s
	}
	return typed, text, nil
}

func paramList(names []string) string {
	if len(names) == 0 {
		return " (this runbook takes no params)"
	}
	return " (params: " + strings.Join(names, ", ") + ")"
}

func docSuffix(doc string) string {
	if doc == "" {
		return ""
	}
	return " (" + doc + ")"
}

// DeploymentParam returns the deployment param that the runbook's roles
// resolve against (the first of type deployment), or nil.
func (rb *Runbook) DeploymentParam() *Param {
	for _, p := range rb.Params {
		if p.Type == ParamDeployment {
			return p
		}
	}
	return nil
}

// ParamTypeNames lists the param types a runbook may declare, for the
// JSON Schema and the reference docs.
func ParamTypeNames() []string { return paramTypeNames() }
