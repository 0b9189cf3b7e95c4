package runbooks

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/cronspec"
	"github.com/runbot/runbot/internal/target"
)

func validateCron(spec string) error {
	if strings.TrimSpace(spec) == "" {
		return fmt.Errorf("empty schedule")
	}
	_, err := cronspec.Parse(spec)
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
