package bind

import (
	"context"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// PoolRunners reaches inventory hosts over SSH through a pool, one
// connection per host shared by every step of every run that uses the
// pool, and runs "local" hosts on this machine. Connections are opened on
// first use, so preparing a run never touches the network.
type PoolRunners struct {
	Inventory *inventory.Inventory
	Pool      *sshrun.Pool
	// UserConfig, when set, is an ssh_config file (e.g. ~/.ssh/config)
	// whose Host entries fill what the inventory leaves unset.
	UserConfig string
}

// Runner implements Runners.
func (pr *PoolRunners) Runner(_ context.Context, h *inventory.Host) (remote.Runner, error) {
	if h.Transport == "local" {
		return &remote.Local{Name: h.Name}, nil
	}
	cfg, err := pr.SSHConfig(h)
	if err != nil {
		return nil, err
	}
	return pr.Pool.Runner(cfg)
}

// SSHConfig translates an inventory host, with its jump hosts, into the
// SSH runner's configuration; sshrun.ConfigFor builds it.
func (pr *PoolRunners) SSHConfig(h *inventory.Host) (sshrun.Config, error) {
	return sshrun.ConfigFor(h.Name, func(name string) (sshrun.Host, error) {
		if name == h.Name {
			return sshHostOf(h), nil
		}
		jh, err := pr.Inventory.Host(name)
		if err != nil {
			return sshrun.Host{}, err
		}
		return sshHostOf(jh), nil
	}, pr.UserConfig)
}

// sshHostOf copies an inventory host's SSH fields.
func sshHostOf(h *inventory.Host) sshrun.Host {
	return sshrun.Host{Jump: h.Jump, Config: sshrun.Config{
		Name: h.Name, Address: h.Address, Port: h.Port, User: h.User,
		IdentityFiles: h.IdentityFiles, PassphraseEnv: h.PassphraseEnv, PassphraseFile: h.PassphraseFile,
		UseAgent: h.Agent, KnownHostsFiles: h.KnownHosts, PinnedHostKeys: h.HostKeys,
		TrustOnFirstUse: h.TrustOnFirstUse, ConnectTimeout: h.ConnectTimeout,
	}}
}

// NewEngine is an engine that reaches inv's hosts through a pool of its
// own: one SSH connection per host, shared by everything the engine runs
// until close, which closes them.
func NewEngine(inv *inventory.Inventory) (_ *engine.Engine, close func()) {
	pool := sshrun.NewPool()
	eng := &engine.Engine{Targets: &InventoryTargets{Inventory: inv, Runners: &PoolRunners{Inventory: inv, Pool: pool}}}
	// Closing connections when the work is done: there is nothing left to
	// report a failure to.
	return eng, func() { _ = pool.Close() }
}

// Prepare loads the inventory at path and prepares a run of rb with the
// given params over its hosts, on an engine of its own (NewEngine): what
// `runbot run` and `runbot explain` run. close closes the engine's
// connections; it is nil when Prepare fails, which closes them itself.
func Prepare(ctx context.Context, path string, rb *runbooks.Runbook, given map[string]string) (_ *engine.Engine, _ *engine.Prepared, close func(), _ error) {
	inv, err := inventory.Load(path)
	if err != nil {
		return nil, nil, nil, err
	}
	eng, closeRunners := NewEngine(inv)
	p, err := eng.Prepare(ctx, rb, given)
	if err != nil {
		closeRunners()
		return nil, nil, nil, err
	}
	return eng, p, closeRunners, nil
}
