// Package inventory describes the hosts runbot may reach and the deployments
// that run on them, each deployment a set of roles (router, prefill, decode…)
// bound to a host, a service and the URLs and files that belong to it.
package inventory

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runbot/runbot/internal/yamlnode"
)

// Inventory is a loaded, validated inventory file.
type Inventory struct {
	File        string
	Hosts       map[string]*Host
	Deployments map[string]*Deployment
}

// Host is one machine and how to reach it.
type Host struct {
	Name string
	// Transport is "ssh" (default) or "local" (the machine runbot runs on).
	Transport string
	Address   string
	Port      int
	User      string
	// IdentityFiles are private keys; PassphraseEnv/PassphraseFile name
	// where a key's passphrase comes from (never the passphrase itself).
	IdentityFiles  []string
	PassphraseEnv  string
	PassphraseFile string
	// Agent allows keys from ssh-agent (SSH_AUTH_SOCK).
	Agent bool
	// KnownHosts are known_hosts files to verify the host key against;
	// HostKeys pin keys in authorized_keys form ("ssh-ed25519 AAAA…").
	KnownHosts []string
	HostKeys   []string
	// TrustOnFirstUse accepts and records an unknown key, once. Off unless
	// set for this host.
	TrustOnFirstUse bool
	// Jump names the host to connect through (ProxyJump); it may itself
	// have a Jump.
	Jump           string
	ConnectTimeout time.Duration
	Services       ServiceManager
	Labels         map[string]string
	// At is where the host's local files were written, by key
	// ("identity_files.0", "known_hosts.1", "passphrase_file"); "" is the
	// host itself. A check of those files (preflight) reports at them.
	At map[string]yamlnode.Pos
}

// Pos is where key of the host was written, or the host's own position
// when it was not (a host built in code has none: 1:1).
func (h *Host) Pos(key string) yamlnode.Pos {
	if p, ok := h.At[key]; ok {
		return p
	}
	if p, ok := h.At[""]; ok {
		return p
	}
	return yamlnode.Pos{Line: 1, Col: 1}
}

// ServiceManager says how a host's services are managed.
type ServiceManager struct {
	// Type is "systemd" (default, via systemctl) or "command".
	Type string
	// Command lines for Type "command"; {unit} is replaced by the quoted
	// unit name.
	Restart, Start, Stop, Show string
}

// Deployment is one service made of roles.
type Deployment struct {
	Name   string
	Roles  map[string]*Role
	Labels map[string]string
}

// Role is one part of a deployment on one host.
type Role struct {
	Name         string
	Host         string
	Unit         string
	URL          string
	MetricsURL   string
	LaunchScript string
	LogFile      string
	Labels       map[string]string
}

// Deployment returns the named deployment or an error naming the known ones.
func (inv *Inventory) Deployment(name string) (*Deployment, error) {
	d, ok := inv.Deployments[name]
	if !ok {
		return nil, fmt.Errorf("unknown deployment %q in inventory %s (known: %s)", name, inv.File, join(slices.Sorted(maps.Keys(inv.Deployments))))
	}
	return d, nil
}

// Host returns the named host or an error naming the known ones.
func (inv *Inventory) Host(name string) (*Host, error) {
	h, ok := inv.Hosts[name]
	if !ok {
		return nil, fmt.Errorf("unknown host %q in inventory %s (known: %s)", name, inv.File, join(slices.Sorted(maps.Keys(inv.Hosts))))
	}
	return h, nil
}

// Role returns the named role of the deployment.
func (d *Deployment) Role(name string) (*Role, error) {
	r, ok := d.Roles[name]
	if !ok {
		return nil, fmt.Errorf("deployment %q has no role %q (roles: %s)", d.Name, name, join(slices.Sorted(maps.Keys(d.Roles))))
	}
	return r, nil
}

func join(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += ", " + x
	}
	return out
}
