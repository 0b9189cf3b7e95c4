package engine

import (
	"fmt"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// RenderArgs renders templated arguments and converts them to their
// declared types.
func RenderArgs(spec argspec.Spec, with map[string]*runbooks.ArgValue, data map[string]any) (argspec.Values, error) {
	out := argspec.Values{}
	for name, av := range with {
		if av.IsConst {
			out[name] = av.Const
			continue
		}
		raw, err := renderRaw(av.Raw, "", av.Template, data)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", name, err)
		}
		arg, _ := spec.Arg(name)
		v, err := argspec.Convert(arg.Type, raw)
		if err == nil {
			err = arg.Validate(v)
		}
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func renderRaw(raw any, path string, tmpls map[string]*tmpl.Template, data map[string]any) (any, error) {
	switch x := raw.(type) {
	case string:
		if t, ok := tmpls[path]; ok {
			return t.Execute(data)
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := renderRaw(e, fmt.Sprintf("%s[%d]", path, i), tmpls, data)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			v, err := renderRaw(e, path+"."+k, tmpls, data)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return raw, nil
}
