package runbooks

import (
	"context"
	"fmt"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote"
)

// PoolRunners reaches inventory hosts over SSH through a pool, one
// connection per host shared by every step of every run that uses the
// pool, and runs "local" hosts on this machine. Connections are opened on
// first use, so preparing a run never touches the network.
type PoolRunners struct {
	Inventory *inventory.Inventory
	Pool      *remote.Pool
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
// SSH runner's configuration.
func (pr *PoolRunners) SSHConfig(h *inventory.Host) (remote.SSHConfig, error) {
	cfg := sshConfigOf(h)
	var chain []remote.SSHConfig
	seen := map[string]bool{h.Name: true}
	for j := h.Jump; j != ""; {
		jh, err := pr.Inventory.Host(j)
		if err != nil {
			return cfg, fmt.Errorf("jump host of %s: %w", h.Name, err)
		}
		if seen[j] {
			return cfg, fmt.Errorf("jump hosts of %s form a loop through %s", h.Name, j)
		}
		seen[j] = true
		// The chain is dialled first hop first: the innermost jump first.
		chain = append([]remote.SSHConfig{sshConfigOf(jh)}, chain...)
		j = jh.Jump
	}
	cfg.Jump = chain
	if pr.UserConfig != "" {
		filled, err := cfg.FillFromUserConfig(pr.UserConfig)
		if err != nil {
			return cfg, fmt.Errorf("host %s: %w", h.Name, err)
		}
		cfg = filled
	}
	return cfg, nil
}

func sshConfigOf(h *inventory.Host) remote.SSHConfig {
	return remote.SSHConfig{
		Name: h.Name, Address: h.Address, Port: h.Port, User: h.User,
		IdentityFiles: h.IdentityFiles, PassphraseEnv: h.PassphraseEnv, PassphraseFile: h.PassphraseFile,
		UseAgent: h.Agent, KnownHostsFiles: h.KnownHosts, PinnedHostKeys: h.HostKeys,
		TrustOnFirstUse: h.TrustOnFirstUse, ConnectTimeout: h.ConnectTimeout,
	}
}
