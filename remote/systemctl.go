package remote

import (
	"bufio"
	"bytes"
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

// RestartCall implements ServiceManager.
func (Systemctl) RestartCall(unit string) string { return shell.Join("systemctl", "restart", unit) }

// NeedDaemonReload implements UnitFileReloader.
func (s Systemctl) NeedDaemonReload(ctx context.Context, units []string) ([]string, error) {
	if len(units) == 0 {
		return nil, nil
	}
	out, err := s.Runner.Run(ctx, Command{Line: shell.Join(append([]string{"systemctl", "show", "-p", "Id,NeedDaemonReload", "--"}, units...)...)})
	if err != nil {
		return nil, err
	}
	if out.ExitCode != 0 {
		return nil, fmt.Errorf("systemctl exited %d: %s", out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	// systemctl prints one block of properties per unit, blocks separated by
	// an empty line.
	var changed []string
	id := ""
	sc := bufio.NewScanner(bytes.NewReader(out.Stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "Id":
			id = v
		case "NeedDaemonReload":
			if v == "yes" {
				changed = append(changed, id)
			}
		case "":
			id = ""
		}
	}
	return changed, nil
}

// daemonReloadLine is the command DaemonReload runs.
const daemonReloadLine = "systemctl daemon-reload"

// DaemonReload implements UnitFileReloader.
func (s Systemctl) DaemonReload(ctx context.Context) error {
	out, err := s.Runner.Run(ctx, Command{Line: daemonReloadLine})
	if err != nil {
		return fmt.Errorf("reload systemd on %s: %w", s.Runner.Host(), err)
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("reload systemd on %s: systemctl exited %d: %s", s.Runner.Host(), out.ExitCode, strings.TrimSpace(string(out.Stderr)))
	}
	return nil
}

// DaemonReloadCall implements UnitFileReloader.
func (Systemctl) DaemonReloadCall() string { return daemonReloadLine }

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
