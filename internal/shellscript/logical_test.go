package shellscript

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const fixtures = "../../testdata/sglang/"

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
	got := LogicalLines("s.sh", script)
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
	require.Equal(t, 6, got[1].LineAt(strings.Index(got[1].Text, "--tp-size")))
	require.Equal(t, 5, got[1].LineAt(0))

	// The logical lines are the statements the word reader sees.
	s := Parse(script)
	var stmts []int
	for _, st := range s.Statements() {
		if len(s.Commands(st)) > 0 {
			stmts = append(stmts, st.First+1)
		}
	}
	require.Equal(t, []int{3, 5, 8, 9, 10, 11, 12}, stmts)
}

func TestLogicalLinesFixtureScript(t *testing.T) {
	b, err := os.ReadFile(fixtures + "serve_dsv4_decode.sh")
	require.NoError(t, err)
	lines := LogicalLines("serve_dsv4_decode.sh", string(b))
	exec := lines[len(lines)-1]
	require.Equal(t, 15, exec.Line)
	require.True(t, strings.HasPrefix(exec.Text, "exec /opt/sglang/venv/bin/python3 -m sglang.launch_server"))
	require.Equal(t, 26, exec.LineAt(strings.Index(exec.Text, "--disaggregation-transfer-backend")))
	for _, l := range lines {
		require.NotContains(t, l.Text, "SYNTHETIC", "comments are dropped")
	}

	s := Parse(string(b))
	f, err := s.LaunchFlag(nil, "--disaggregation-transfer-backend")
	require.NoError(t, err)
	require.Equal(t, ScriptFlag{Found: true, Value: "nixl", Line: 26}, f)
	f, err = s.LaunchFlag(nil, "--disable-overlap-schedule")
	require.NoError(t, err)
	require.False(t, f.Found)
	c, err := s.Launch(nil)
	require.NoError(t, err)
	require.Equal(t, 15, c.First+1)
	require.Equal(t, 35, c.Last+1)
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
	got := UnitFileLines(out)
	require.Equal(t, []LogicalLine{
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 1, Text: "[Service]"},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 3, Text: "Environment=SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX"},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service", Line: 4, Text: "ExecStart=/root/serve_dsv4_decode.sh    --extra", starts: []int{38}},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service.d/override.conf", Line: 1, Text: "[Service]"},
		{File: "/etc/systemd/system/sglang-dsv4-decode.service.d/override.conf", Line: 3, Text: "Environment=UCX_NET_DEVICES=mlx5_2:1"},
	}, got)
}
