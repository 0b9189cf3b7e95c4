package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/replay"
)

// TestRunbotTest runs `runbot test` on the shipped runbooks' recorded
// cases (the incident's own evidence among them), and on copies of the
// incident's test with an expectation that is wrong, a typo in a key, and
// an id the runbook does not define.
func TestRunbotTest(t *testing.T) {
	runbot, _ := buildBinaries(t)
	incident, err := filepath.Abs("../../runbooks/builtin/testdata/recordings/sglang-pd-wedge/incident-2026-06-18")
	require.NoError(t, err)
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "wedge_test.yaml")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cases := []struct {
		name   string
		file   string
		code   int
		stdout []string
	}{
		{"shipped cases pass", "../../runbooks/builtin", 0,
			[]string{"--- PASS: sglang-pd-wedge/incident-2026-06-18", "ok\t"}},
		{"a wrong verdict fails with expected, got and the evidence", write("runbook: sglang-pd-wedge\ntests:\n  - name: wrong\n    recording: " + incident + "\n    expect:\n      diagnoses: [healthy]\n"), 1,
			[]string{"--- FAIL: sglang-pd-wedge/wrong", "wedge_test.yaml:6:7: diagnoses", "expected: [healthy]", "got:      [pd_transfer_wedge]", "finding alive_not_working (critical)", "[chat@router] POST /v1/chat/completions"}},
		{"an expected absence that is present fails", write("runbook: sglang-pd-wedge\ntests:\n  - name: absent\n    recording: " + incident + "\n    expect:\n      absent_findings: [decode_stalled]\n"), 1,
			[]string{"findings that must not hold", "got:      [decode_stalled]"}},
		{"a key typo is reported at its position", write("runbook: sglang-pd-wedge\ntests:\n  - name: typo\n    recording: " + incident + "\n    expect:\n      diagnosis: [healthy]\n"), 1,
			[]string{"wedge_test.yaml:6:7:", "diagnosis"}},
		{"inline observations decide the verdict", write("runbook: host-basics\ntests:\n  - name: roomy\n    params: {host: h1}\n    observations:\n      started: 2026-06-18T21:04:23Z\n      steps:\n        - {step: memory, target: host, commands: [{stdout: \"avail_pct=50\\n\"}]}\n    expect:\n      findings: [memory_low]\n"), 1,
			[]string{"--- FAIL: host-basics/roomy", "findings that must hold", "(missing [memory_low])", "inconclusive disk_nearly_full: step disk on host did not run: replay: the recording has nothing for step disk"}},
		{"a typo in inline observations is reported at its position", write("runbook: host-basics\ntests:\n  - name: typo\n    params: {host: h1}\n    observations:\n      started: 2026-06-18T21:04:23Z\n      steps:\n        - step: memory\n          target: host\n          comands: []\n    expect:\n      findings: [memory_low]\n"), 1,
			[]string{"wedge_test.yaml:10:11:", "comands"}},
		{"an unknown id is a failure, not an absence", write("runbook: sglang-pd-wedge\ntests:\n  - name: unknown\n    recording: " + incident + "\n    expect:\n      absent_diagnoses: [pd_wedge]\n"), 1,
			[]string{"does not define", "[pd_wedge]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runRunbot(t, runbot, "test", c.file)
			require.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, want := range c.stdout {
				require.Contains(t, stdout, want)
			}
		})
	}

	t.Run("a diagnosis no case expects is named", func(t *testing.T) {
		dir := t.TempDir()
		rb, err := os.ReadFile("../../runbooks/builtin/host-basics.yaml")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "host-basics.yaml"), rb, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "host-basics_test.yaml"), []byte("runbook: host-basics\ntests:\n  - name: low\n    params: {host: h1}\n    observations:\n      started: 2026-06-18T21:04:23Z\n      steps:\n        - {step: disk, target: host, commands: [{stdout: \"max_used_pct=10\\n\"}]}\n        - {step: memory, target: host, commands: [{stdout: \"avail_pct=3\\n\"}]}\n        - {step: load, target: host, commands: [{stdout: \"load1=0.5 cores=8\\n\"}]}\n    expect:\n      findings: [memory_low]\n"), 0o644))
		stdout, stderr, code := runRunbot(t, runbot, "test", dir)
		require.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		require.Contains(t, stdout, "--- PASS: host-basics/low")
		require.Contains(t, stdout, "warning: "+filepath.Join(dir, "host-basics.yaml")+": diagnosis host_ok of runbook host-basics is expected by no test case")
	})

	t.Run("json", func(t *testing.T) {
		stdout, stderr, code := runRunbot(t, runbot, "test", "--format", "json", "../../runbooks/builtin")
		require.Equal(t, 0, code, stderr)
		var doc replay.Suite
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
		require.True(t, doc.Passed)
		require.NotEmpty(t, doc.Results)
		var names []string
		for _, r := range doc.Results {
			names = append(names, r.Name)
			require.True(t, r.Passed, r.Name)
		}
		require.Contains(t, strings.Join(names, " "), "incident-2026-06-18")
	})
}
