package preflight_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/preflight"
)

// write puts files (name to content) in a new directory and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	return dir
}

const runbook = `name: disk
params:
  deployment: {type: deployment, required: true}
steps:
  - {id: df, check: command, target: host, with: {cmd: 'df -h /'}}
findings:
  - {id: full, severity: warning, when: 'steps.df.stdout contains "100%"', summary: full}
`

// TestLoad is what serve --check prints, called as a function: the config,
// the inventory and the runbooks are read, every reference between them is
// checked, and each problem comes back at its file:line:col, all in one
// pass; a config that checks clean gives a plan serve can run.
func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		over  preflight.Overrides
		want  []string
	}{{
		name: "clean",
		files: map[string]string{
			"runbot.yaml":    "listen: 127.0.0.1:8080\nstore: runbot.db\ninventory: inventory.yaml\nrunbooks: [rb]\nschedules:\n  - runbook: disk\n    cron: \"*/5 * * * *\"\n    params: {deployment: web}\n",
			"inventory.yaml": "hosts:\n  h1: {address: 127.0.0.1}\ndeployments:\n  web:\n    roles:\n      host: {host: h1}\n",
			"rb/disk.yaml":   runbook,
		},
	}, {
		name: "each file's problem at its position",
		files: map[string]string{
			"runbot.yaml":    "listen: 127.0.0.1:8080\nstore: runbot.db\ninventory: inventory.yaml\nrunbooks: [rb, missing]\nschedules:\n  - runbook: dsik\n    cron: \"*/5 * * * *\"\n    params: {deployment: web}\n  - runbook: disk\n    cron: \"*/5 * * * *\"\n    params: {deployment: wbe}\n",
			"inventory.yaml": "hosts:\n  h1: {address: 127.0.0.1}\ndeployments:\n  web:\n    roles:\n      host: {host: h1}\n",
			"rb/disk.yaml":   runbook,
		},
		want: []string{
			`runbot.yaml:4:11: runbooks: stat DIR/missing: no such file or directory`,
			`runbot.yaml:6:14: schedule 1: unknown runbook "dsik" (did you mean "disk"?)`,
			`runbot.yaml:11:26: schedule 2: param deployment: inventory inventory.yaml has no deployment matching "wbe" (deployments: web)`,
		},
	}, {
		name: "the overrides are read instead of the config's paths",
		files: map[string]string{
			"runbot.yaml":        "listen: 127.0.0.1:8080\nstore: runbot.db\ninventory: nowhere.yaml\nrunbooks: [nowhere]\nschedules:\n  - runbook: disk\n    cron: \"*/5 * * * *\"\n    params: {deployment: web}\n",
			"other/inv.yaml":     "hosts:\n  h1: {address: 127.0.0.1}\ndeployments:\n  web:\n    roles:\n      host: {host: h1}\n",
			"other/rb/disk.yaml": runbook,
		},
		over: preflight.Overrides{Inventory: "other/inv.yaml", Runbooks: []string{"other/rb"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.files)
			t.Chdir(dir)
			plan, problems, err := preflight.Load("runbot.yaml", nil, tc.over)
			require.NoError(t, err)
			var got []string
			for _, p := range problems {
				// The message names the absolute path it looked at.
				got = append(got, strings.ReplaceAll(p.String(), dir, "DIR"))
			}
			require.Equal(t, tc.want, got)
			require.NotNil(t, plan)
			if tc.want == nil {
				require.Contains(t, plan.Catalog.Names(), "disk", "the runbooks of the directories read, beside the shipped ones")
				require.Contains(t, plan.Inventory.Deployments, "web")
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, len(topLevel(tc.files)), "a preflight opens and writes nothing (no store)")
		})
	}
}

// topLevel is the set of first path elements of the files' names.
func topLevel(files map[string]string) map[string]bool {
	out := map[string]bool{}
	for name := range files {
		first, _, _ := strings.Cut(name, "/")
		out[first] = true
	}
	return out
}
