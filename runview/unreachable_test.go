package runview_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

const keyErr = "connect to gpu-1 (10.0.0.1:22): ssh: handshake failed: ssh: unable to authenticate"

// unreachableRuns are two hosts where gpu-1 could not be reached: every
// step there failed with the same SSH error, wrapped by each check.
func unreachableRuns() []*runbooks.TargetRun {
	var runs []*runbooks.TargetRun
	for _, id := range []string{"health", "unit", "logs", "flags", "gpu_mem"} {
		runs = append(runs,
			&runbooks.TargetRun{Step: id, Target: "prefill", Host: "gpu-0", Status: step.OK},
			&runbooks.TargetRun{Step: id, Target: "decode", Host: "gpu-1", Status: step.Error, Error: "read " + id + " on gpu-1: " + keyErr})
	}
	return append(runs, &runbooks.TargetRun{Step: "probe", Target: "prefill", Host: "gpu-0", Status: step.Error, Error: "probe refused"})
}

func unreachableState() *runview.State {
	rs := runview.New(store.Run{ID: "r-1", Runbook: "health", Trigger: store.TriggerAlert, RequestedBy: "alertmanager"}, nil)
	rs.StepOrder = []string{"health", "unit", "logs", "flags", "gpu_mem", "probe"}
	return rs
}

// An unreachable host is said once, in a section before the others, and
// the steps section folds the step runs that failed with its error into
// one line; a step that failed alone keeps its own line.
func TestUnreachableHostSummarisedFirst(t *testing.T) {
	t.Parallel()
	rs := unreachableState()
	rs.SetReport(&runbooks.Report{Outcome: runbooks.OutcomeInconclusive, Steps: unreachableRuns(),
		Inconclusive: []runbooks.FindingResult{{ID: "decode_down", Reason: "health did not run on decode"}}})
	m := rs.Message()

	require.Equal(t, chat.Section{Heading: "Cannot reach gpu-1 (5 step runs stopped): " + keyErr, Status: chat.StatusError}, m.Sections[0])
	require.Equal(t, "Could not decide", m.Sections[1].Heading)
	steps := m.Sections[len(m.Sections)-1]
	require.Equal(t, "5 of 11 step runs completed.", steps.Text)
	require.Equal(t, []string{
		"5 steps on gpu-1 (health, unit, logs +2 more): " + keyErr,
		"probe on prefill@gpu-0: error: probe refused",
	}, lineTexts(steps))
	require.Equal(t, chat.StatusError, steps.Lines[0].Status)
}

// While the run goes, the runs finished so far are folded where the first
// of them would show, and the host is said to be unreachable as soon as
// its finished runs say so.
func TestUnreachableHostWhileRunning(t *testing.T) {
	t.Parallel()
	rs := unreachableState()
	for _, tr := range unreachableRuns()[:6] {
		rs.Event(engine.Event{Kind: engine.EventStepFinished, Run: tr})
	}
	m := rs.Message()
	require.Equal(t, "Cannot reach gpu-1 (3 step runs stopped): "+keyErr, m.Sections[0].Heading)
	steps := m.Sections[len(m.Sections)-1]
	require.Equal(t, []string{
		"health on prefill@gpu-0: ok in 0s",
		"3 steps on gpu-1 (health, unit, logs): " + keyErr,
		"unit on prefill@gpu-0: ok in 0s",
		"logs on prefill@gpu-0: ok in 0s",
		"flags: waiting",
		"gpu_mem: waiting",
		"probe: waiting",
	}, lineTexts(steps))
}

// A run whose steps all ran has no such section and folds nothing.
func TestNoUnreachableSectionWhenAllRan(t *testing.T) {
	t.Parallel()
	rs := unreachableState()
	var ok []*runbooks.TargetRun
	for _, tr := range unreachableRuns() {
		if tr.Status.Ran() {
			ok = append(ok, tr)
		}
	}
	rs.SetReport(&runbooks.Report{Outcome: runbooks.OutcomeOK, Steps: ok})
	m := rs.Message()
	require.Equal(t, "Nothing found", m.Sections[0].Heading)
	require.Empty(t, m.Sections[len(m.Sections)-1].Lines)
}
