// Package bind binds runbooks to the inventory: a deployment's roles
// resolve to hosts, units, URLs and files, each with its runner (an SSH
// runner from a pool, or the local machine), and a fleet run picks its
// deployments from the inventory.
package bind

import (
	"context"
	"fmt"

	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks/engine"
)

// Runners hands out the runner for an inventory host. Implementations keep
// one connection per host, so every step of a run shares it.
type Runners interface {
	Runner(ctx context.Context, h *inventory.Host) (remote.Runner, error)
}

// InventoryTargets resolves targets from an inventory.
type InventoryTargets struct {
	Inventory *inventory.Inventory
	Runners   Runners
}

// Target implements Targets.
func (it *InventoryTargets) Target(ctx context.Context, ref engine.TargetRef) (target.Target, error) {
	inv := it.Inventory
	if ref.Host != "" {
		h, err := inv.Host(ref.Host)
		if err != nil {
			return target.Target{}, err
		}
		return it.bind(ctx, target.Target{Role: ref.Role, Host: h.Name, Labels: h.Labels}, h)
	}
	if ref.Deployment == "" {
		return target.Target{}, fmt.Errorf("target %q: no deployment given", ref.Role)
	}
	dep, err := inv.Deployment(ref.Deployment)
	if err != nil {
		return target.Target{}, err
	}
	role, err := dep.Role(ref.Role)
	if err != nil {
		return target.Target{}, err
	}
	h, err := inv.Host(role.Host)
	if err != nil {
		return target.Target{}, err
	}
	labels := map[string]string{}
	for k, v := range h.Labels {
		labels[k] = v
	}
	for k, v := range role.Labels {
		labels[k] = v
	}
	t := target.Target{
		Deployment: dep.Name, Role: role.Name, Host: h.Name, Unit: role.Unit,
		URL: role.URL, MetricsURL: role.MetricsURL, LaunchScript: role.LaunchScript,
		LogFile: role.LogFile, Labels: labels,
	}
	return it.bind(ctx, t, h)
}

func (it *InventoryTargets) bind(ctx context.Context, t target.Target, h *inventory.Host) (target.Target, error) {
	r, err := it.Runners.Runner(ctx, h)
	if err != nil {
		return t, fmt.Errorf("host %s: %w", h.Name, err)
	}
	t.Runner = r
	switch h.Services.Type {
	case "command":
		t.Services = remote.Commands{Runner: r, ShowLine: h.Services.Show, RestartLine: h.Services.Restart}
	default:
		if ssh, ok := r.(*sshrun.Runner); ok {
			t.Services = sshrun.Systemd{SSH: ssh, Systemctl: remote.Systemctl{Runner: r}}
		} else {
			t.Services = remote.Systemctl{Runner: r}
		}
	}
	return t, nil
}

// LocalRunners runs everything on this machine; it serves inventories whose
// hosts all use the local transport.
type LocalRunners struct{}

// Runner implements Runners.
func (LocalRunners) Runner(_ context.Context, h *inventory.Host) (remote.Runner, error) {
	if h.Transport != "local" {
		return nil, fmt.Errorf("host %s uses ssh transport, which this runner source does not provide", h.Name)
	}
	return &remote.Local{Name: h.Name}, nil
}
