package sshrun

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"
)

// Defaults for the Config fields that are left zero.
const (
	DefaultPort           = 22
	DefaultConnectTimeout = 10 * time.Second
	DefaultKeepAlive      = 15 * time.Second
	// DefaultMaxSessions matches OpenSSH's own MaxSessions default: more
	// concurrent sessions on one connection are refused by the server, so
	// runbot queues them instead.
	DefaultMaxSessions = 10
)

// Config says how to reach one host over SSH. Zero fields take the
// defaults documented on each field; FillFromUserConfig can fill them from
// ~/.ssh/config first.
type Config struct {
	// Name is how errors and evidence name the host, and the alias looked up
	// in ~/.ssh/config. It defaults to Address.
	Name string
	// Address is the host name or IP to connect to; it defaults to Name.
	Address string
	// Port defaults to 22.
	Port int
	// User defaults to the user runbot runs as.
	User string

	// IdentityFiles are private key files to offer. When empty and UseAgent
	// is false, the usual ~/.ssh/id_ed25519, id_ecdsa and id_rsa are tried.
	// A certificate next to a key (key + "-cert.pub") is offered with it.
	IdentityFiles []string
	// PassphraseEnv names an environment variable that holds the passphrase
	// of encrypted identity files. The value never appears in errors.
	PassphraseEnv string
	// PassphraseFile is a file whose first line is that passphrase.
	PassphraseFile string
	// UseAgent offers the keys of the agent at SSH_AUTH_SOCK.
	UseAgent bool

	// KnownHostsFiles are checked for the host key; defaults to
	// ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts. Missing files count
	// as empty.
	KnownHostsFiles []string
	// PinnedHostKeys are authorized_keys-format lines ("ssh-ed25519 AAAA…")
	// that the inventory pins for this host. When set, they are the only
	// keys accepted and known_hosts is not consulted.
	PinnedHostKeys []string
	// TrustOnFirstUse accepts the key of a host that no known_hosts file
	// knows and records it in the first KnownHostsFiles entry. A key that
	// differs from a recorded one is still refused.
	TrustOnFirstUse bool

	// Jump is the chain of hosts to go through, first hop first, like
	// OpenSSH's ProxyJump. Each hop's own Jump is ignored.
	Jump []Config

	// ConnectTimeout bounds the TCP dial plus handshake of each hop;
	// defaults to 10s.
	ConnectTimeout time.Duration
	// KeepAlive is the interval between keepalive probes on an idle
	// connection; a probe not answered within the interval closes the
	// connection so the next command reconnects. Defaults to 15s; negative
	// disables keepalives.
	KeepAlive time.Duration
	// MaxOutput caps stdout and stderr of commands whose Command sets no
	// cap; 0 means DefaultMaxOutput.
	MaxOutput int
	// MaxSessions bounds concurrent commands on the connection; further
	// commands wait. Defaults to 10, OpenSSH's server-side limit.
	MaxSessions int
}

// host names the host for errors.
func (c Config) host() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Address
}

// addr is the host:port to dial.
func (c Config) addr() string {
	a := c.Address
	if a == "" {
		a = c.Name
	}
	p := c.Port
	if p == 0 {
		p = DefaultPort
	}
	return net.JoinHostPort(a, strconv.Itoa(p))
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() (Config, error) {
	if c.Name == "" && c.Address == "" {
		return c, errors.New("ssh config: neither name nor address is set")
	}
	if c.Address == "" {
		c.Address = c.Name
	}
	if c.Name == "" {
		c.Name = c.Address
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("ssh config for %s: port %d is out of range", c.Name, c.Port)
	}
	if c.User == "" {
		u, err := currentUser()
		if err != nil {
			return c, fmt.Errorf("ssh config for %s: no user set and %w", c.Name, err)
		}
		c.User = u
	}
	home, _ := os.UserHomeDir()
	if len(c.IdentityFiles) == 0 && !c.UseAgent && home != "" {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			p := filepath.Join(home, ".ssh", n)
			if _, err := os.Stat(p); err == nil {
				c.IdentityFiles = append(c.IdentityFiles, p)
			}
		}
	}
	if len(c.KnownHostsFiles) == 0 && home != "" {
		c.KnownHostsFiles = []string{filepath.Join(home, ".ssh", "known_hosts"), "/etc/ssh/ssh_known_hosts"}
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	// Copy the chain so that filling defaults never writes to the caller's
	// slice.
	jumps := make([]Config, len(c.Jump))
	for i, j := range c.Jump {
		j.Jump = nil
		d, err := j.withDefaults()
		if err != nil {
			return c, fmt.Errorf("jump host %d of %s: %w", i+1, c.Name, err)
		}
		jumps[i] = d
	}
	c.Jump = jumps
	return c, nil
}

func currentUser() (string, error) {
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("cannot tell the current user: %w", err)
	}
	return u.Username, nil
}
