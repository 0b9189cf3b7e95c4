package checks

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	require.NoError(t, os.WriteFile(conf, []byte("port=30200\nmode=decode\n"), 0o644))
	mtime := time.Date(2026, 6, 18, 9, 41, 7, 0, time.UTC)
	require.NoError(t, os.Chtimes(conf, mtime, mtime))

	for _, tc := range []struct {
		name     string
		args     argspec.Values
		want     ReadFileOutput
		evidence []string
	}{
		{
			name:     "extracts values",
			args:     argspec.Values{"path": conf, "extract": map[string]string{"port": `port=(\d+)`, "tls": `tls=(\S+)`}},
			want:     ReadFileOutput{Path: conf, Readable: true, Text: "port=30200\nmode=decode\n", Modified: mtime, Values: map[string]string{"port": "30200"}},
			evidence: []string{"read " + conf + ": 23 bytes", "port = 30200", `tls: no match for tls=(\S+)`},
		},
		{
			name:     "cut at the cap",
			args:     argspec.Values{"path": conf, "max_bytes": 4},
			want:     ReadFileOutput{Path: conf, Readable: true, Text: "port", Truncated: true, Modified: mtime, Values: map[string]string{}},
			evidence: []string{"read " + conf + ": 4 bytes (cut at the cap)"},
		},
		{
			name: "a missing file is an observation",
			args: argspec.Values{"path": filepath.Join(dir, "absent.conf")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Target: target.Target{Role: "decode", Host: "gpu-node-01", Runner: &remote.Local{Name: "gpu-node-01"}}, Args: tc.args}
			res, err := ReadFile{}.Run(t.Context(), env)
			require.NoError(t, err)
			o, ok := res.Values.(ReadFileOutput)
			require.True(t, ok, "Values is %T", res.Values)
			if tc.want.Path == "" {
				require.False(t, o.Readable)
				require.Contains(t, o.Problem, "No such file")
				require.Len(t, res.Evidence, 1)
				require.Contains(t, res.Evidence[0], "could not read "+filepath.Join(dir, "absent.conf"))
				return
			}
			require.Equal(t, tc.want, o)
			require.Equal(t, tc.evidence, res.Evidence)
		})
	}
	require.Equal(t, []string{"read /etc/x.conf on gpu-node-01"},
		ReadFile{}.Plan(Env{Target: target.Target{Host: "gpu-node-01"}, Args: argspec.Values{"path": "/etc/x.conf"}}))
}
