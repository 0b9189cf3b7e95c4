package runbooks

import (
	"context"
	"sync"

	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
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

// runShells gives every step of one run the same multiplexed shell per SSH
// host (runbooks that set ssh.shared_session), so that the host pays for one
// session per run rather than one per command. Shells open on first use
// and close with the run; local hosts and other runners are left as they
// are.
type runShells struct {
	mu     sync.Mutex
	shells map[*sshrun.Runner]*sshrun.Shell
}

func newRunShells() *runShells {
	return &runShells{shells: map[*sshrun.Runner]*sshrun.Shell{}}
}

// share returns t with its runner, and the service manager that acts
// through it, replaced by the run's shell for that host.
func (rs *runShells) share(t target.Target) target.Target {
	ssh, ok := t.Runner.(*sshrun.Runner)
	if !ok {
		return t
	}
	rs.mu.Lock()
	sh := rs.shells[ssh]
	if sh == nil {
		sh = sshrun.NewShell(ssh)
		rs.shells[ssh] = sh
	}
	rs.mu.Unlock()
	t.Runner = sh
	switch svc := t.Services.(type) {
	case remote.Systemctl:
		svc.Runner = sh
		t.Services = svc
	case sshrun.Systemd:
		// Reads keep going over D-Bus; systemctl runs in the shell.
		svc.Systemctl.Runner = sh
		t.Services = svc
	case remote.Commands:
		svc.Runner = sh
		t.Services = svc
	}
	return t
}

// close ends every shell the run opened; the SSH connections stay pooled.
func (rs *runShells) close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, sh := range rs.shells {
		_ = sh.Close() // Shell.Close reports nothing
	}
	rs.shells = map[*sshrun.Runner]*sshrun.Shell{}
}
