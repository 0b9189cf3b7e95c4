package runbooks

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
)

// CronParser parses schedules: standard five fields, an optional leading
// seconds field, and descriptors such as @every 10m.
var CronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func validateCron(spec string) error {
	if strings.TrimSpace(spec) == "" {
		return fmt.Errorf("empty schedule")
	}
	_, err := CronParser.Parse(spec)
	return err
}

// ArgData is what `with:` templates see: .params, .target and .run.
func ArgData(params map[string]any, t target.Target, runID string, started time.Time) map[string]any {
	return map[string]any{
		"params": params,
		"target": map[string]any{
			"deployment": t.Deployment, "role": t.Role, "host": t.Host, "unit": t.Unit,
			"url": t.URL, "metrics_url": t.MetricsURL, "launch_script": t.LaunchScript,
			"log_file": t.LogFile, "labels": t.Labels,
		},
		"run": map[string]any{"id": runID, "started": started},
	}
}

func zeroArgData(rb *Runbook) map[string]any {
	params := map[string]any{}
	for _, p := range rb.Params {
		params[p.Name] = reflect.Zero(p.goType()).Interface()
	}
	return ArgData(params, target.Target{Labels: map[string]string{}}, "", time.Time{})
}

// RenderArgs renders templated arguments and converts them to their
// declared types.
func RenderArgs(spec argspec.Spec, with map[string]*ArgValue, data map[string]any) (argspec.Values, error) {
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

func renderRaw(raw any, path string, tmpls map[string]*Template, data map[string]any) (any, error) {
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
