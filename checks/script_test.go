package checks

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLogicalLines(t *testing.T) {
	script := strings.Join([]string{
		"#!/bin/bash",                           // 1
		"# --disable-overlap-schedule was here", // 2
		"export A=1  # trailing comment",        // 3
		"",                                      // 4
		"exec python3 -m x \\",                  // 5
		"  --tp-size 4 \\",                      // 6
		"  # --disable-overlap-schedule \\",     // 7: a comment ends the command in bash
		"  --never-reached",                     // 8
		"echo 'a # not a comment' \"b # nor this\" c\\#d", // 9
		"echo even\\\\",      // 10: an escaped backslash does not continue
		"next",               // 11
		"url=http://h/#frag", // 12
	}, "\n")
	got := logicalLines("s.sh", script)
	var texts []string
	for _, l := range got {
		texts = append(texts, l.Text)
	}
	require.Equal(t, []string{
		"export A=1",
		"exec python3 -m x    --tp-size 4",
		"--never-reached",
		"echo 'a # not a comment' \"b # nor this\" c\\#d",
		"echo even\\\\",
		"next",
		"url=http://h/#frag",
	}, texts)
	require.Equal(t, []int{3, 5, 8, 9, 10, 11, 12}, []int{got[0].Line, got[1].Line, got[2].Line, got[3].Line, got[4].Line, got[5].Line, got[6].Line})
	require.Equal(t, 6, got[1].lineAt(strings.Index(got[1].Text, "--tp-size")))
	require.Equal(t, 5, got[1].lineAt(0))
}

func TestLogicalLinesFixtureScript(t *testing.T) {
	b, err := os.ReadFile(fixtures + "serve_dsv4_decode.sh")
	require.NoError(t, err)
	lines := logicalLines("serve_dsv4_decode.sh", string(b))
	exec := lines[len(lines)-1]
	require.Equal(t, 15, exec.Line)
	require.True(t, strings.HasPrefix(exec.Text, "exec /opt/sglang/venv/bin/python3 -m sglang.launch_server"))
	require.Equal(t, 26, exec.lineAt(strings.Index(exec.Text, "--disaggregation-transfer-backend")))
	words := shellWords(exec.Text)
	v, ok := findFlag(words, "--disaggregation-transfer-backend")
	require.True(t, ok)
	require.Equal(t, "nixl", v)
	_, ok = findFlag(words, "--disable-overlap-schedule")
	require.False(t, ok)
	for _, l := range lines {
		require.NotContains(t, l.Text, "SYNTHETIC", "comments are dropped")
	}
}

func TestUnitFileLines(t *testing.T) {
	out := strings.Join([]string{
		"# /etc/systemd/system/sglang-dsv4-decode.service",
		"[Service]",
		"; a comment",
		"Environment=SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX",
		"ExecStart=/root/serve_dsv4_decode.sh \\",
		"  --extra",
		"",
		"# /etc/systemd/system/sglang-dsv4-decode.service.d/override.conf",
		"[Service]",
		"# Environment=SGLANG_DISAGGREGATION_NIXL_BACKEND=LIBFABRIC",
		"Environment=UCX_NET_DEVICES=mlx5_2:1",
	}, "\n")
	got := unitFileLines(out)
	require.Equal(t, []scriptLine{
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 1, Text: "[Service]"},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 3, Text: "Environment=SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX"},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 4, Text: "ExecStart=/root/serve_dsv4_decode.sh    --extra", starts: []int{38}},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service.d/override.conf", Line: 1, Text: "[Service]"},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service.d/override.conf", Line: 3, Text: "Environment=UCX_NET_DEVICES=mlx5_2:1"},
	}, got)
}

func TestShellWords(t *testing.T) {
	cases := map[string][]string{
		`a b  c`:                            {"a", "b", "c"},
		`--x='a b' --y="c d"`:               {"--x=a b", "--y=c d"},
		`--x "it's" 'say "hi"'`:             {"--x", "it's", `say "hi"`},
		`a\ b "\$HOME" "\q"`:                {"a b", "$HOME", `\q`},
		`--model-path "$MODEL" ""`:          {"--model-path", "$MODEL", ""},
		"python3\t-m\tsglang.launch_server": {"python3", "-m", "sglang.launch_server"},
	}
	for in, want := range cases {
		require.Equal(t, want, shellWords(in), in)
	}
}

func TestFindFlag(t *testing.T) {
	cases := []struct {
		words []string
		flag  string
		value string
		found bool
	}{
		{[]string{"x", "--disable-overlap-schedule", "--enable-metrics"}, "--disable-overlap-schedule", "", true},
		{[]string{"x", "--disable-overlap-schedule"}, "--disable-overlap-schedule", "", true},
		{[]string{"x", "--decode-log-interval", "40"}, "--decode-log-interval", "40", true},
		{[]string{"x", "--decode-log-interval=40"}, "--decode-log-interval", "40", true},
		{[]string{"x", "--disable-overlap-schedule-v2"}, "--disable-overlap-schedule", "", false},
		{[]string{"x", "--disable-overlap-schedule", "&&", "y"}, "--disable-overlap-schedule", "", true},
		{[]string{"x", "--no-disable-overlap-schedule"}, "--disable-overlap-schedule", "", false},
	}
	for _, c := range cases {
		v, ok := findFlag(c.words, c.flag)
		require.Equal(t, c.found, ok, c.words)
		require.Equal(t, c.value, v, c.words)
	}
}
