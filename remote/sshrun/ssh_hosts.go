package sshrun

import "fmt"

// Host is how an inventory describes one SSH host, in plain fields:
// how to reach it and, by name, the host to go through.
type Host struct {
	// Config holds the host's own settings; its Jump is ignored.
	Config Config
	// Jump names the host to connect through (like OpenSSH's ProxyJump),
	// which may have a Jump of its own; empty for none.
	Jump string
}

// ConfigFor builds the configuration of the host called name, as the SSH
// runner and Pool take it: the host's own settings, then the chain of jump
// hosts found by following each host's Jump through lookup, first hop
// first, then, when userConfig names an OpenSSH client config file (such
// as ~/.ssh/config; empty for none), whatever its Host entries say about
// fields the hosts leave unset. A Jump that leads back to a host already
// in the chain is refused.
func ConfigFor(name string, lookup func(name string) (Host, error), userConfig string) (Config, error) {
	h, err := lookup(name)
	if err != nil {
		return Config{}, fmt.Errorf("host %s: %w", name, err)
	}
	cfg := h.Config
	var chain []Config
	seen := map[string]bool{name: true}
	for j := h.Jump; j != ""; {
		if seen[j] {
			return cfg, fmt.Errorf("jump hosts of %s form a loop through %s", name, j)
		}
		seen[j] = true
		jh, err := lookup(j)
		if err != nil {
			return cfg, fmt.Errorf("jump host of %s: %w", name, err)
		}
		hop := jh.Config
		hop.Jump = nil
		// The chain is dialled first hop first: the innermost jump first.
		chain = append([]Config{hop}, chain...)
		j = jh.Jump
	}
	cfg.Jump = chain
	if userConfig != "" {
		filled, err := cfg.FillFromUserConfig(userConfig)
		if err != nil {
			return cfg, fmt.Errorf("host %s: %w", name, err)
		}
		cfg = filled
	}
	return cfg, nil
}
