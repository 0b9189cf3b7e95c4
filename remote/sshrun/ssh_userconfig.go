package sshrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"
)

// FillFromUserConfig returns c with its unset fields filled from an OpenSSH
// client config file, as `ssh <Name>` would read it: HostName, User, Port,
// IdentityFile, ProxyJump, UserKnownHostsFile, ConnectTimeout and
// ServerAliveInterval. Fields already set win. An empty path means
// ~/.ssh/config, which may then be missing; a named file must exist.
func (c Config) FillFromUserConfig(path string) (Config, error) {
	explicit := path != ""
	if !explicit {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, nil
		}
		path = filepath.Join(home, ".ssh", "config")
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read ssh config: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	uc, err := ssh_config.Decode(f)
	if err != nil {
		return c, fmt.Errorf("parse ssh config %s: %w", path, err)
	}
	return fillFrom(uc, path, c, true)
}

func fillFrom(uc *ssh_config.Config, path string, c Config, jumps bool) (Config, error) {
	alias := c.Name
	if alias == "" {
		alias = c.Address
	}
	if alias == "" {
		return c, errors.New("ssh config: neither name nor address is set")
	}
	get := func(key string) string {
		v, _ := uc.Get(alias, key)
		return v
	}
	bad := func(key, v string, err error) error {
		return fmt.Errorf("ssh config %s, host %s: %s %q: %w", path, alias, key, v, err)
	}
	if c.Address == "" {
		if v := get("HostName"); v != "" {
			c.Address = expandTokens(v, alias, c.User)
		}
	}
	if c.User == "" {
		c.User = get("User")
	}
	if c.Port == 0 {
		if v := get("Port"); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil {
				return c, bad("Port", v, err)
			}
			c.Port = p
		}
	}
	if len(c.IdentityFiles) == 0 {
		files, _ := uc.GetAll(alias, "IdentityFile")
		for _, f := range files {
			c.IdentityFiles = append(c.IdentityFiles, expandTokens(f, alias, c.User))
		}
	}
	if len(c.KnownHostsFiles) == 0 {
		for _, f := range strings.Fields(get("UserKnownHostsFile")) {
			c.KnownHostsFiles = append(c.KnownHostsFiles, expandTokens(f, alias, c.User))
		}
	}
	if c.ConnectTimeout == 0 {
		if v := get("ConnectTimeout"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, bad("ConnectTimeout", v, err)
			}
			c.ConnectTimeout = time.Duration(n) * time.Second
		}
	}
	if c.KeepAlive == 0 {
		if v := get("ServerAliveInterval"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, bad("ServerAliveInterval", v, err)
			}
			c.KeepAlive = time.Duration(n) * time.Second
		}
	}
	if jumps && len(c.Jump) == 0 {
		v := get("ProxyJump")
		if v != "" && v != "none" {
			for _, hop := range strings.Split(v, ",") {
				j, err := parseJump(strings.TrimSpace(hop))
				if err != nil {
					return c, bad("ProxyJump", v, err)
				}
				// Each hop is itself looked up in the file, as ssh does; its
				// own ProxyJump is not followed.
				j, err = fillFrom(uc, path, j, false)
				if err != nil {
					return c, err
				}
				c.Jump = append(c.Jump, j)
			}
		}
	}
	return c, nil
}

// parseJump reads one ProxyJump hop: [user@]host[:port].
func parseJump(s string) (Config, error) {
	var j Config
	s = strings.TrimPrefix(s, "ssh://")
	if at := strings.LastIndex(s, "@"); at >= 0 {
		j.User, s = s[:at], s[at+1:]
	}
	host := s
	if i := strings.LastIndex(s, ":"); i >= 0 && !strings.Contains(s[i+1:], "]") {
		p, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return j, fmt.Errorf("bad port in jump host %q", s)
		}
		host, j.Port = s[:i], p
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return j, errors.New("empty jump host")
	}
	j.Name = host
	return j, nil
}

// expandTokens expands the few ssh_config tokens that matter for paths and
// host names: ~, %d (home), %h (host), %r (remote user), %u (local user),
// %%.
func expandTokens(s, host, remoteUser string) string {
	home, _ := os.UserHomeDir()
	if strings.HasPrefix(s, "~/") {
		s = filepath.Join(home, s[2:])
	}
	if !strings.Contains(s, "%") {
		return s
	}
	local, _ := currentUser()
	r := strings.NewReplacer("%%", "%", "%d", home, "%h", host, "%r", remoteUser, "%u", local)
	return r.Replace(s)
}
