package preflight_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/preflight"
)

// TestFiles: serve --check reports each local file a host or the store
// needs that cannot be read, at the key of the config or the inventory
// that names it and with the absolute path it tried; a missing one is an
// error, an unreadable one a warning unless required. Relative paths are
// read from the directory of the file that names them, wherever runbot was
// started.
func TestFiles(t *testing.T) {
	const cfg = "listen: 127.0.0.1:8080\nstore: state/runbot.db\ninventory: inventory.yaml\n"
	for _, tc := range []struct {
		name     string
		files    map[string]string
		sockets  []string // files that exist and cannot be opened for reading, even by root
		cwd      string   // where runbot runs, under the test's directory
		config   string   // the config's path under the test's directory
		over     preflight.Overrides
		required bool
		want     []string
	}{{
		name: "missing identity file",
		files: map[string]string{
			"runbot.yaml":    cfg,
			"inventory.yaml": "hosts:\n  gpu-1: {address: 10.0.0.1, identity_files: [keys/id_ed25519], host_key: ssh-ed25519 AAAA}\n",
		},
		want: []string{"inventory.yaml:2:47: host gpu-1: identity file DIR/keys/id_ed25519 does not exist: every run on the host would fail"},
	}, {
		name: "missing known_hosts",
		files: map[string]string{
			"runbot.yaml":    cfg,
			"inventory.yaml": "hosts:\n  gpu-1:\n    address: 10.0.0.1\n    known_hosts: [/nonexistent/known_hosts, known_hosts]\n",
			"known_hosts":    "",
		},
		want: []string{"inventory.yaml:4:19: host gpu-1: known_hosts file /nonexistent/known_hosts does not exist: every run on the host would fail"},
	}, {
		name: "missing passphrase file, also an error with required",
		files: map[string]string{
			"runbot.yaml":    cfg,
			"inventory.yaml": "hosts:\n  gpu-1:\n    address: 10.0.0.1\n    identity_file: id\n    passphrase_file: id.pass\n",
			"id":             "key",
		},
		required: true,
		want:     []string{"inventory.yaml:5:22: host gpu-1: passphrase file DIR/id.pass does not exist: every run on the host would fail"},
	}, {
		name: "unreadable key is a warning",
		files: map[string]string{
			"runbot.yaml":    cfg,
			"inventory.yaml": "hosts:\n  gpu-1: {address: 10.0.0.1, identity_file: id}\n",
		},
		sockets: []string{"id"},
		want:    []string{"inventory.yaml:2:45: warning: host gpu-1: identity file DIR/id cannot be read: open DIR/id: no such device or address"},
	}, {
		name: "unreadable key is an error with --secrets",
		files: map[string]string{
			"runbot.yaml":    cfg,
			"inventory.yaml": "hosts:\n  gpu-1: {address: 10.0.0.1, identity_file: id}\n",
		},
		sockets:  []string{"id"},
		required: true,
		want:     []string{"inventory.yaml:2:45: host gpu-1: identity file DIR/id cannot be read: open DIR/id: no such device or address"},
	}, {
		name: "relative paths from the config's and the inventory's directories, run from elsewhere",
		files: map[string]string{
			"etc/runbot.yaml":         "store: ../var/runbot.db\ninventory: inv/inventory.yaml\nrunbooks: [rb]\n",
			"etc/inv/inventory.yaml":  "hosts:\n  gpu-1: {address: 10.0.0.1, identity_file: ssh/id, known_hosts: ssh/known_hosts, passphrase_file: ssh/pass}\n",
			"etc/inv/ssh/id":          "key",
			"etc/inv/ssh/known_hosts": "",
			"etc/inv/ssh/pass":        "pw",
			"etc/rb/disk.yaml":        runbook,
			"elsewhere/.keep":         "",
		},
		cwd:    "elsewhere",
		config: "etc/runbot.yaml",
	}, {
		name: "a missing file found from elsewhere is named by its absolute path",
		files: map[string]string{
			"etc/runbot.yaml":        "store: ../var/runbot.db\ninventory: inv/inventory.yaml\n",
			"etc/inv/inventory.yaml": "hosts:\n  gpu-1: {address: 10.0.0.1, identity_file: ssh/id}\n",
			"elsewhere/ssh/id":       "a key where the working directory would have found it",
		},
		cwd:    "elsewhere",
		config: "etc/runbot.yaml",
		want:   []string{"../etc/inv/inventory.yaml:2:45: host gpu-1: identity file DIR/etc/inv/ssh/id does not exist: every run on the host would fail"},
	}, {
		name: "trust on first use creates known_hosts, pinned keys need none",
		files: map[string]string{
			"runbot.yaml":    cfg,
			"inventory.yaml": "hosts:\n  gpu-1: {address: 10.0.0.1, known_hosts: kh, trust_on_first_use: true}\n  gpu-2: {address: 10.0.0.2, known_hosts: kh, host_key: ssh-ed25519 AAAA}\n  here: {transport: local, identity_file: nokey}\n",
		},
	}, {
		name: "store directory under a file",
		files: map[string]string{
			"runbot.yaml": "store: state/runbot.db\n",
			"state":       "a file, not a directory",
		},
		want: []string{"runbot.yaml:1:8: store: the directory of DIR/state/runbot.db cannot be created: DIR/state is not a directory"},
	}, {
		name: "an inventory override is the target host's: its files are not looked for",
		files: map[string]string{
			"runbot.yaml": "store: state/runbot.db\n",
			"staged.yaml": "hosts:\n  gpu-1: {address: 10.0.0.1, identity_file: /etc/runbot/ssh/nokey}\n",
		},
		over: preflight.Overrides{Inventory: "staged.yaml"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.files)
			for _, name := range tc.sockets {
				l, err := net.Listen("unix", filepath.Join(dir, name))
				require.NoError(t, err)
				t.Cleanup(func() { _ = l.Close() })
			}
			t.Chdir(filepath.Join(dir, tc.cwd))
			config := tc.config
			if config == "" {
				config = "runbot.yaml"
			}
			config, err := filepath.Rel(filepath.Join(dir, tc.cwd), filepath.Join(dir, config))
			require.NoError(t, err)
			plan, problems, err := preflight.Load(config, nil, tc.over)
			require.NoError(t, err)
			require.Empty(t, problems, "the config and the inventory load")
			var got []string
			for _, p := range preflight.Files(plan, tc.required) {
				got = append(got, strings.ReplaceAll(p.String(), dir, "DIR"))
			}
			require.Equal(t, tc.want, got)
		})
	}
}
