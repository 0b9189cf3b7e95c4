package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

var backendExtract = map[string]string{
	"transfer_backend": `--disaggregation-transfer-backend[= ](\S+)`,
	"nixl_backend":     `SGLANG_DISAGGREGATION_NIXL_BACKEND=(\S+)`,
	"mode":             `--disaggregation-mode[= ](\S+)`,
	"ib_device":        `--disaggregation-ib-device[= ](\S+)`,
	"overlap_off":      `--disable-overlap-schedule`,
}

func fixturePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(fixtures + name)
	require.NoError(t, err)
	return p
}

func configEnv(script string, args argspec.Values) Env {
	return Env{
		Target: target.Target{Role: "decode", Host: "gpu-node-01", Runner: &remote.Local{Name: "gpu-node-01"},
			Unit: "sglang-dsv4-decode", LaunchScript: script},
		Args: args,
	}
}

func runGrepConfig(t *testing.T, env Env) (GrepConfigOutput, []string) {
	t.Helper()
	res, err := GrepConfig{}.Run(t.Context(), env)
	require.NoError(t, err)
	o, ok := res.Values.(GrepConfigOutput)
	require.True(t, ok, "Values is %T", res.Values)
	for _, l := range res.Evidence {
		t.Log(l)
	}
	return o, res.Evidence
}

func TestGrepConfigFixtureScripts(t *testing.T) {
	for _, c := range []struct {
		script, mode     string
		backendLine, env int
	}{
		{"serve_dsv4_decode.sh", "decode", 26, 8},
		{"serve_dsv4_prefill.sh", "prefill", 23, 7},
	} {
		t.Run(c.script, func(t *testing.T) {
			script := fixturePath(t, c.script)
			o, ev := runGrepConfig(t, configEnv(script, argspec.Values{"extract": backendExtract}))
			require.Equal(t, map[string]string{"transfer_backend": "nixl", "nixl_backend": "UCX", "mode": c.mode}, o.Values)
			require.Equal(t, map[string]bool{"transfer_backend": true, "nixl_backend": true, "mode": true, "ib_device": false, "overlap_off": false}, o.Found)
			require.Equal(t, fmt.Sprintf("%s:%d", script, c.backendLine), o.Locations["transfer_backend"])
			require.Equal(t, fmt.Sprintf("%s:%d", script, c.env), o.Locations["nixl_backend"])
			require.Equal(t, []string{script}, o.Files)
			require.Empty(t, o.Unreadable)
			require.Contains(t, ev, fmt.Sprintf("transfer_backend = nixl (%s:%d)", script, c.backendLine))
			require.Contains(t, ev, "overlap_off: not set in "+script)
		})
	}
}

func TestGrepConfigCommentsContinuationsAndOverrides(t *testing.T) {
	script := filepath.Join(t.TempDir(), "serve.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/bash
export SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX
export SGLANG_DISAGGREGATION_NIXL_BACKEND=LIBFABRIC
exec python3 -m sglang.launch_server \
  --disaggregation-transfer-backend=mooncake \
  # --disable-overlap-schedule
`), 0o644))
	o, ev := runGrepConfig(t, configEnv(script, argspec.Values{"extract": backendExtract}))
	require.Equal(t, "mooncake", o.Values["transfer_backend"])
	require.Equal(t, script+":5", o.Locations["transfer_backend"])
	require.Equal(t, "LIBFABRIC", o.Values["nixl_backend"], "the later export wins")
	require.Len(t, o.Matches["nixl_backend"], 2)
	require.False(t, o.Found["overlap_off"], "a commented-out flag is not set")
	require.Contains(t, ev, fmt.Sprintf("nixl_backend = LIBFABRIC (%s:3); overrides UCX at %s:2", script, script))
}

func TestGrepConfigUnitFilesAndMissingScript(t *testing.T) {
	dir := t.TempDir()
	unit := "# /etc/systemd/system/sglang-dsv4-decode.service\n[Service]\nEnvironment=SGLANG_DISAGGREGATION_NIXL_BACKEND=POSIX\nExecStart=/root/serve_dsv4_decode.sh\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "unit"), []byte(unit), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl"), []byte(fmt.Sprintf(`#!/bin/sh
[ "$1 $2 $3 $4" = "cat --no-pager -- sglang-dsv4-decode" ] || { echo "unexpected: $*" >&2; exit 2; }
cat %s
`, filepath.Join(dir, "unit"))), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	script := fixturePath(t, "serve_dsv4_decode.sh")
	o, ev := runGrepConfig(t, configEnv(script, argspec.Values{"extract": backendExtract, "unit_files": true,
		"files": []string{script, "/nonexistent/serve.sh"}}))
	require.Equal(t, "UCX", o.Values["nixl_backend"], "the script's export runs after the unit's Environment=")
	require.Equal(t, []ConfigMatch{
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 2, Value: "POSIX"},
		{File: script, Line: 8, Value: "UCX"},
	}, o.Matches["nixl_backend"])
	require.Equal(t, []string{"/etc/systemd/system/sglang-dsv4-decode.service", script}, o.Files)
	require.Contains(t, o.Unreadable["/nonexistent/serve.sh"], "No such file")
	require.Contains(t, ev[0], "could not read /nonexistent/serve.sh")
}

func TestGrepConfigNeedsSomethingToRead(t *testing.T) {
	_, err := GrepConfig{}.Run(t.Context(), configEnv("", argspec.Values{"extract": backendExtract}))
	require.ErrorContains(t, err, "no launch script")
}

func TestGrepConfigPlan(t *testing.T) {
	plan := GrepConfig{}.Plan(configEnv("/root/serve_dsv4_decode.sh", argspec.Values{"extract": backendExtract, "unit_files": true}))
	require.Equal(t, []string{
		"run on gpu-node-01: systemctl cat --no-pager -- sglang-dsv4-decode",
		"read /root/serve_dsv4_decode.sh on gpu-node-01",
		"extract ib_device, mode, nixl_backend, overlap_off, transfer_backend",
	}, plan)
}
