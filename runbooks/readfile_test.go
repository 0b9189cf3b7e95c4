package runbooks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/replay"
)

// readFileRunbook reads a config file and a file that is not there.
const readFileRunbook = `
name: read-config
params:
  deployment: {type: deployment, required: true}
  conf: {type: string, required: true}
steps:
  - id: conf
    check: read_file
    target: a
    with: {path: '{{ .params.conf }}', extract: {port: 'port=(\d+)'}}
  - id: missing
    check: read_file
    target: a
    with: {path: /nonexistent/runbot.conf}
findings:
  - id: port_set
    severity: info
    when: steps.conf.values.port == "30200" && !steps.missing.readable
    summary: the port is set and the other file is absent
`

// TestRecordReplayFileReads: a run that reads files over SSH records what
// it read — SFTP reads where sshd offers SFTP, the cat command where it
// does not — and replays to the same report, reaching no host.
func TestRecordReplayFileReads(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "server.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# decode\nport=30200\n"), 0o644))
	for _, tc := range []struct {
		name   string
		config []string
		reads  bool
	}{
		{"over sftp", []string{"Subsystem sftp /usr/lib/openssh/sftp-server"}, true},
		{"with cat", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sshdtest.Start(t, sshdtest.Options{Config: tc.config})
			inv := sshInventory(t, srv, fmt.Sprintf("  other:\n    address: %s\n    port: %d\n    user: %s\n    identity_files: [%s]\n    host_keys: [%q]",
				srv.Host, srv.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey))
			rb, problems := runbooks.Parse("read-config.yaml", []byte(readFileRunbook))
			require.Empty(t, problems)
			pool := sshrun.NewPool()
			t.Cleanup(func() { _ = pool.Close() })
			rec := replay.NewRecording()
			e := &engine.Engine{
				Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}},
				Tape:    rec,
			}
			params := map[string]string{"deployment": "d", "conf": conf}
			p, err := e.Prepare(t.Context(), rb, params)
			require.NoError(t, err)
			live := e.Run(t.Context(), p, engine.RunOptions{})
			for _, s := range live.Steps {
				require.Equal(t, step.OK, s.Status, "%s: %s", s.Step, s.Error)
			}
			require.Equal(t, []string{"port_set"}, findingIDs(live))

			dir := filepath.Join(t.TempDir(), "rec")
			require.NoError(t, rec.Save(dir, live, replay.SaveOptions{}))
			observed, err := os.ReadFile(filepath.Join(dir, "conf", "a", "observed.yaml"))
			require.NoError(t, err)
			if tc.reads {
				require.Contains(t, string(observed), "reads:\n  - path: "+conf)
				require.NotContains(t, string(observed), "commands:")
				data, err := os.ReadFile(filepath.Join(dir, "conf", "a", "read-1.data"))
				require.NoError(t, err)
				require.Equal(t, "# decode\nport=30200\n", string(data))
				missing, err := os.ReadFile(filepath.Join(dir, "missing", "a", "observed.yaml"))
				require.NoError(t, err)
				require.Contains(t, string(missing), "problem: no such file")
			} else {
				require.Contains(t, string(observed), fmt.Sprintf("line: stat -c %%Y -- %s && cat -- %s", conf, conf))
				require.NotContains(t, string(observed), "reads:")
			}

			// The replay reaches no host: stop sshd first.
			srv.Stop()
			loaded, err := replay.LoadRecording(dir)
			require.NoError(t, err)
			rep, err := replay.Replay(t.Context(), rb, loaded, replay.ReplayOptions{})
			require.NoError(t, err)
			require.Equal(t, findingIDs(live), findingIDs(rep))
			require.Len(t, rep.Steps, len(live.Steps))
			for i, s := range rep.Steps {
				require.Equal(t, step.OK, s.Status, "%s: %s", s.Step, s.Error)
				require.Equal(t, live.Steps[i].Values, s.Values, s.Step)
				require.Equal(t, live.Steps[i].Evidence, s.Evidence, s.Step)
			}
		})
	}
}
