package runbooks_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// agesRunbook reads one log twice, the second read after the first, and
// quotes each read under a finding of its own, as sglang-pd-wedge quotes
// decode's last batch line under several findings.
const agesRunbook = `
name: ages
params:
  deployment: {type: deployment, required: true}
  log: {type: string, required: true}
steps:
  - id: early
    check: log_progress
    target: router
    with: {file: '{{ .params.log }}', progress: 'Decode batch', stall_after: 5s, timezone: UTC}
  - id: late
    check: log_progress
    target: router
    needs: [early]
    with: {file: '{{ .params.log }}', progress: 'Decode batch', stall_after: 5s, timezone: UTC}
findings:
  - id: stalled_early
    severity: critical
    when: steps.early.stalled
    summary: 'last batch at {{ .steps.early.last_progress.UTC.Format "15:04:05" }} UTC, {{ ago .now .steps.early.last_progress }}'
    evidence: [early]
  - id: stalled_late
    severity: critical
    when: steps.late.stalled
    summary: 'last batch at {{ .steps.late.last_progress.UTC.Format "15:04:05" }} UTC, {{ ago .now .steps.late.last_progress }}'
    evidence: [late]
`

// TestOneLineOneAgeAcrossFindings: two steps read the same log line at
// different moments and two findings quote it; the report shows the line
// with one age everywhere (evidence and summaries), counted to the run's
// end, not two ages counted from each step's own read.
func TestOneLineOneAgeAcrossFindings(t *testing.T) {
	log := filepath.Join(t.TempDir(), "decode.log")
	require.NoError(t, os.WriteFile(log, []byte(
		"[2026-12-04 22:30:47 DP0 TP0] Decode batch, #running-req: 1, #token: 30, gen throughput (token/s): 39.23, #queue-req: 0\n"), 0o644))
	batch := time.Date(2026, 12, 4, 22, 30, 47, 0, time.UTC)

	// Every look at the clock is two seconds after the one before, so the
	// second step reads well after the first, as on a real host.
	var mu sync.Mutex
	clock := batch.Add(15 * time.Second)
	e := localEngine(t)
	e.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(2 * time.Second)
		return clock
	}
	rb, problems := runbooks.Parse("ages.yaml", []byte(agesRunbook))
	require.Empty(t, problems)
	p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "demo", "log": log})
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{})
	for _, s := range rep.Steps {
		require.Equal(t, step.OK, s.Status, "%s: %s", s.Step, s.Error)
	}
	gaps := map[string]time.Duration{}
	for _, s := range rep.Steps {
		gaps[s.Step] = s.Values.(checks.LogProgressOutput).Gap
	}
	require.Greater(t, gaps["late"], gaps["early"], "the steps read at different moments")

	want := step.AgeText(rep.FinishedAt, batch)
	ago := regexp.MustCompile(`\(([^()]* ago)\)`)
	require.Len(t, rep.Findings, 2)
	for _, f := range rep.Findings {
		require.NotEmpty(t, f.Evidence, f.ID)
		m := ago.FindStringSubmatch(f.Evidence[0])
		require.NotNil(t, m, "%s quotes the line with its age: %s", f.ID, f.Evidence[0])
		require.Equal(t, want, m[1], "%s: %s", f.ID, f.Evidence[0])
		require.Equal(t, "last batch at 22:30:47 UTC, "+want, f.Summary)
	}
	for _, s := range rep.Steps {
		require.Contains(t, s.Evidence[0], "("+want+")", "the step's own evidence shows the same age")
	}
}

// TestAgeNeverNegative: a line stamped after the instant ages count to
// (logged while the last read ran, or by a host whose clock is ahead) is
// 0s ago, not "-568ms ago".
func TestAgeNeverNegative(t *testing.T) {
	end := time.Date(2026, 12, 4, 22, 31, 18, 0, time.UTC)
	for _, tc := range []struct {
		line time.Time
		want string
	}{
		{end.Add(-31200 * time.Millisecond), "31.2s ago"},
		{end.Add(-1134 * time.Millisecond), "1.1s ago"},
		{end.Add(-568 * time.Millisecond), "568ms ago"},
		{end.Add(568 * time.Millisecond), "0s ago"},
		{end.Add(-90 * time.Minute), "1h30m0s ago"},
	} {
		require.Equal(t, "last batch ("+tc.want+")", step.Ages("last batch ("+step.Ago(tc.line)+")", end))
	}
}
