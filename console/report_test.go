package console_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

const keyErr = "connect to gpu-1 (10.0.0.1:22): no usable ssh key for gpu-1: read identity file /k: permission denied"

// unreachableReport is a run on two hosts where gpu-1 could not be
// reached: every step there failed with the same SSH error.
func unreachableReport() *runbooks.Report {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rep := &runbooks.Report{RunID: "r-1", Runbook: "sglang-health", StartedAt: start, VerdictAt: start.Add(time.Second),
		FinishedAt: start.Add(2 * time.Second), Outcome: runbooks.OutcomeInconclusive,
		Inconclusive: []runbooks.FindingResult{{ID: "decode_down", Reason: "health did not run on decode"}}}
	for _, id := range []string{"health", "unit", "logs", "flags", "gpu_mem"} {
		rep.Steps = append(rep.Steps,
			&runbooks.TargetRun{Step: id, Check: "c", Target: "prefill", Host: "gpu-0", Status: step.OK, Evidence: []string{id + " fine"}, Duration: 10 * time.Millisecond},
			&runbooks.TargetRun{Step: id, Check: "c", Target: "decode", Host: "gpu-1", Status: step.Error, Error: "read " + id + " on gpu-1: " + keyErr})
	}
	rep.Steps = append(rep.Steps, &runbooks.TargetRun{Step: "probe", Check: "c", Target: "prefill", Host: "gpu-0", Status: step.Error, Error: "probe refused"})
	return rep
}

// TestReportSummarisesAnUnreachableHost: the CLI says once, before the
// diagnosis, that gpu-1 could not be reached, and its steps table folds the
// five runs that failed with that error into one line; a step that failed
// alone keeps its own line.
func TestReportSummarisesAnUnreachableHost(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, console.Report(&buf, unreachableReport(), false))
	out := buf.String()
	t.Log(out)

	reach := "cannot reach gpu-1 (5 step runs stopped): " + keyErr
	require.Contains(t, out, reach+"\n")
	require.Less(t, strings.Index(out, reach), strings.Index(out, "Could not evaluate"), "the host comes before what it left undecided")
	require.Contains(t, out, "  error  5 steps on gpu-1 (health, unit, logs +2 more): "+keyErr+"\n")
	require.Equal(t, 2, strings.Count(out, keyErr), "the error is said once as the cause and once in the table")
	require.Regexp(t, `(?m)^  error\s+probe\s+prefill\s+.*probe refused$`, out)
	require.Regexp(t, `(?m)^  ok\s+gpu_mem\s+prefill\s+10ms\s+gpu_mem fine$`, out)
}

// TestReportWithoutFailuresHasNoSummary: a run where everything ran says
// nothing of hosts and folds nothing.
func TestReportWithoutFailuresHasNoSummary(t *testing.T) {
	t.Parallel()
	rep := unreachableReport()
	var ok []*runbooks.TargetRun
	for _, tr := range rep.Steps {
		if tr.Status.Ran() {
			ok = append(ok, tr)
		}
	}
	rep.Steps, rep.Inconclusive, rep.Outcome = ok, nil, runbooks.OutcomeOK
	var buf bytes.Buffer
	require.NoError(t, console.Report(&buf, rep, false))
	require.NotContains(t, buf.String(), "cannot reach")
	require.NotContains(t, buf.String(), "steps on")
	require.Equal(t, 5, strings.Count(buf.String(), "  ok  "))
}
