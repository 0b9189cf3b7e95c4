package sshrun_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runbot/runbot/remote/sshrun"
	"github.com/stretchr/testify/require"
)

// hostsOf is a lookup over a fixed set of hosts, as an inventory's.
func hostsOf(hosts map[string]sshrun.Host) func(string) (sshrun.Host, error) {
	return func(name string) (sshrun.Host, error) {
		h, ok := hosts[name]
		if !ok {
			return sshrun.Host{}, fmt.Errorf("unknown host %q", name)
		}
		return h, nil
	}
}

func TestConfigForJumpChain(t *testing.T) {
	hosts := map[string]sshrun.Host{
		"gpu-1": {Config: sshrun.Config{Name: "gpu-1", Address: "10.0.0.5", User: "root",
			IdentityFiles: []string{"/k/id"}, KnownHostsFiles: []string{"/k/known"}, ConnectTimeout: 3 * time.Second}, Jump: "inner"},
		"inner": {Config: sshrun.Config{Name: "inner", Address: "10.0.0.1", Port: 2222,
			Jump: []sshrun.Config{{Name: "ignored"}}}, Jump: "outer"},
		"outer": {Config: sshrun.Config{Name: "outer", Address: "bastion.example", PinnedHostKeys: []string{"ssh-ed25519 AAAA"}}},
	}
	cfg, err := sshrun.ConfigFor("gpu-1", hostsOf(hosts), "")
	require.NoError(t, err)
	require.Equal(t, sshrun.Config{
		Name: "gpu-1", Address: "10.0.0.5", User: "root",
		IdentityFiles: []string{"/k/id"}, KnownHostsFiles: []string{"/k/known"}, ConnectTimeout: 3 * time.Second,
		Jump: []sshrun.Config{
			{Name: "outer", Address: "bastion.example", PinnedHostKeys: []string{"ssh-ed25519 AAAA"}},
			{Name: "inner", Address: "10.0.0.1", Port: 2222},
		},
	}, cfg, "dialled first hop first, each hop's own Jump left out")

	direct, err := sshrun.ConfigFor("outer", hostsOf(hosts), "")
	require.NoError(t, err)
	require.Empty(t, direct.Jump)
}

func TestConfigForRefuses(t *testing.T) {
	hosts := map[string]sshrun.Host{
		"a":       {Config: sshrun.Config{Name: "a"}, Jump: "b"},
		"b":       {Config: sshrun.Config{Name: "b"}, Jump: "a"},
		"self":    {Config: sshrun.Config{Name: "self"}, Jump: "self"},
		"dangles": {Config: sshrun.Config{Name: "dangles"}, Jump: "nowhere"},
	}
	_, err := sshrun.ConfigFor("a", hostsOf(hosts), "")
	require.EqualError(t, err, "jump hosts of a form a loop through a")
	_, err = sshrun.ConfigFor("self", hostsOf(hosts), "")
	require.EqualError(t, err, "jump hosts of self form a loop through self")
	_, err = sshrun.ConfigFor("dangles", hostsOf(hosts), "")
	require.EqualError(t, err, `jump host of dangles: unknown host "nowhere"`)
	_, err = sshrun.ConfigFor("missing", hostsOf(hosts), "")
	require.EqualError(t, err, `host missing: unknown host "missing"`)

	failing := func(string) (sshrun.Host, error) { return sshrun.Host{}, errors.New("boom") }
	_, err = sshrun.ConfigFor("x", failing, "")
	require.ErrorContains(t, err, "boom")
}

func TestConfigForFillsFromUserConfig(t *testing.T) {
	path := writeFile(t, "config", "Host web1\n  HostName 10.1.1.1\n  User fromfile\n  Port 2200\n")
	hosts := map[string]sshrun.Host{"web1": {Config: sshrun.Config{Name: "web1", User: "explicit"}}}
	cfg, err := sshrun.ConfigFor("web1", hostsOf(hosts), path)
	require.NoError(t, err)
	require.Equal(t, "10.1.1.1", cfg.Address, "unset fields are filled")
	require.Equal(t, 2200, cfg.Port)
	require.Equal(t, "explicit", cfg.User, "the inventory's fields win")

	_, err = sshrun.ConfigFor("web1", hostsOf(hosts), path+".missing")
	require.ErrorContains(t, err, "host web1: read ssh config")
}
