package remote

import (
	"context"
	"fmt"
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// Commands manages services through configured command lines, for hosts
// without systemd. Each line may contain {unit}, replaced by the shell-quoted
// unit name; Show's command must print `systemctl show`-style KEY=VALUE lines.
type Commands struct {
	Runner      Runner
	ShowLine    string
	RestartLine string
}

// Show implements ServiceManager.
func (c Commands) Show(ctx context.Context, unit string) (UnitState, error) {
	out, err := c.run(ctx, "show", c.ShowLine, unit)
	if err != nil {
		return UnitState{}, err
	}
	return ParseShow(unit, out.Stdout)
}

// Restart implements ServiceManager.
func (c Commands) Restart(ctx context.Context, unit string) error {
	_, err := c.run(ctx, "restart", c.RestartLine, unit)
	return err
}

// RestartCall implements ServiceManager: the configured restart line.
func (c Commands) RestartCall(unit string) string {
	return strings.ReplaceAll(c.RestartLine, "{unit}", shell.Quote(unit))
}

func (c Commands) run(ctx context.Context, verb, tmpl, unit string) (Output, error) {
	if tmpl == "" {
		return Output{}, fmt.Errorf("%s unit %s on %s: no %s command configured for this host", verb, unit, c.Runner.Host(), verb)
	}
	line := strings.ReplaceAll(tmpl, "{unit}", shell.Quote(unit))
	out, err := c.Runner.Run(ctx, Command{Line: line})
	if err != nil {
		return out, fmt.Errorf("%s unit %s on %s: %w", verb, unit, c.Runner.Host(), err)
	}
	if out.ExitCode != 0 {
		return out, fmt.Errorf("%s unit %s on %s: command exited %d: %s", verb, unit, c.Runner.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)+" "+string(out.Stdout)))
	}
	return out, nil
}
