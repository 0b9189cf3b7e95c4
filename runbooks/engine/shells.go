package engine

import (
	"sync"

	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/remote/sshrun"
)

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
