package remote

import (
	"context"
	"fmt"
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// Systemctl manages systemd units by running systemctl through a Runner, so
// it works the same over SSH and locally.
type Systemctl struct {
	Runner Runner
}

// Show implements ServiceManager.
func (s Systemctl) Show(ctx context.Context, unit string) (UnitState, error) {
	line := shell.Join("systemctl", "show", "--no-pager", "-p", strings.Join(ShowProperties, ","), unit)
	out, err := s.Runner.Run(ctx, Command{Line: line})
	if err != nil {
		return UnitState{}, fmt.Errorf("show unit %s on %s: %w", unit, s.Runner.Host(), err)
	}
	if out.ExitCode != 0 {
		return UnitState{}, fmt.Errorf("show unit %s on %s: systemctl exited %d: %s", unit, s.Runner.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	return ParseShow(unit, out.Stdout)
}

// Restart implements ServiceManager.
func (s Systemctl) Restart(ctx context.Context, unit string) error {
	return s.do(ctx, "restart", unit)
}

func (s Systemctl) do(ctx context.Context, verb, unit string) error {
	out, err := s.Runner.Run(ctx, Command{Line: shell.Join("systemctl", verb, unit)})
	if err != nil {
		return fmt.Errorf("%s unit %s on %s: %w", verb, unit, s.Runner.Host(), err)
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("%s unit %s on %s: systemctl exited %d: %s", verb, unit, s.Runner.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	return nil
}
