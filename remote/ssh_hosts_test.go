package remote_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/remote"
)

// hostsOf is a lookup over a fixed set of hosts, as an inventory's.
func hostsOf(hosts map[string]remote.SSHHost) func(string) (remote.SSHHost, error) {
	return func(name string) (remote.SSHHost, error) {
		h, ok := hosts[name]
		if !ok {
			return remote.SSHHost{}, fmt.Errorf("unknown host %q", name)
		}
		return h, nil
	}
}

func TestConfigForJumpChain(t *testing.T) {
	hosts := map[string]remote.SSHHost{
		"gpu-1": {Config: remote.SSHConfig{Name: "gpu-1", Address: "10.0.0.5", User: "root",
			IdentityFiles: []string{"/k/id"}, KnownHostsFiles: []string{"/k/known"}, ConnectTimeout: 3 * time.Second}, Jump: "inner"},
		"inner": {Config: remote.SSHConfig{Name: "inner", Address: "10.0.0.1", Port: 2222,
			Jump: []remote.SSHConfig{{Name: "ignored"}}}, Jump: "outer"},
		"outer": {Config: remote.SSHConfig{Name: "outer", Address: "bastion.example", PinnedHostKeys: []string{"ssh-ed25519 AAAA"}}},
	}
	cfg, err := remote.ConfigFor("gpu-1", hostsOf(hosts), "")
	require.NoError(t, err)
	require.Equal(t, remote.SSHConfig{
		Name: "gpu-1", Address: "10.0.0.5", User: "root",
		IdentityFiles: []string{"/k/id"}, KnownHostsFiles: []string{"/k/known"}, ConnectTimeout: 3 * time.Second,
		Jump: []remote.SSHConfig{
			{Name: "outer", Address: "bastion.example", PinnedHostKeys: []string{"ssh-ed25519 AAAA"}},
			{Name: "inner", Address: "10.0.0.1", Port: 2222},
		},
	}, cfg, "dialled first hop first, each hop's own Jump left out")

	direct, err := remote.ConfigFor("outer", hostsOf(hosts), "")
	require.NoError(t, err)
	require.Empty(t, direct.Jump)
}

func TestConfigForRefuses(t *testing.T) {
	hosts := map[string]remote.SSHHost{
		"a":       {Config: remote.SSHConfig{Name: "a"}, Jump: "b"},
		"b":       {Config: remote.SSHConfig{Name: "b"}, Jump: "a"},
		"self":    {Config: remote.SSHConfig{Name: "self"}, Jump: "self"},
		"dangles": {Config: remote.SSHConfig{Name: "dangles"}, Jump: "nowhere"},
	}
	_, err := remote.ConfigFor("a", hostsOf(hosts), "")
	require.EqualError(t, err, "jump hosts of a form a loop through a")
	_, err = remote.ConfigFor("self", hostsOf(hosts), "")
	require.EqualError(t, err, "jump hosts of self form a loop through self")
	_, err = remote.ConfigFor("dangles", hostsOf(hosts), "")
	require.EqualError(t, err, `jump host of dangles: unknown host "nowhere"`)
	_, err = remote.ConfigFor("missing", hostsOf(hosts), "")
	require.EqualError(t, err, `host missing: unknown host "missing"`)

	failing := func(string) (remote.SSHHost, error) { return remote.SSHHost{}, errors.New("boom") }
	_, err = remote.ConfigFor("x", failing, "")
	require.ErrorContains(t, err, "boom")
}

func TestConfigForFillsFromUserConfig(t *testing.T) {
	path := writeFile(t, "config", "Host web1\n  HostName 10.1.1.1\n  User fromfile\n  Port 2200\n")
	hosts := map[string]remote.SSHHost{"web1": {Config: remote.SSHConfig{Name: "web1", User: "explicit"}}}
	cfg, err := remote.ConfigFor("web1", hostsOf(hosts), path)
	require.NoError(t, err)
	require.Equal(t, "10.1.1.1", cfg.Address, "unset fields are filled")
	require.Equal(t, 2200, cfg.Port)
	require.Equal(t, "explicit", cfg.User, "the inventory's fields win")

	_, err = remote.ConfigFor("web1", hostsOf(hosts), path+".missing")
	require.ErrorContains(t, err, "host web1: read ssh config")
}
