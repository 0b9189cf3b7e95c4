package runview_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// A report in one line: the diagnosis first, else the worst finding's
// section, else the outcome.
func TestVerdict(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rep  *runbooks.Report
		want string
	}{
		"no report": {rep: nil, want: ""},
		"diagnoses": {rep: &runbooks.Report{Diagnoses: []runbooks.DiagnosisResult{{Summary: "decode wedged"}, {Summary: "other"}}}, want: "Diagnosis: decode wedged (and 1 more)"},
		"finding":   {rep: &runbooks.Report{Findings: []runbooks.FindingResult{{Summary: "disk 95% full", Severity: runbooks.Warning}}}, want: "disk 95% full"},
		"nothing":   {rep: &runbooks.Report{Outcome: runbooks.OutcomeOK}, want: "Nothing found"},
	} {
		require.Equal(t, tc.want, runview.Verdict(tc.rep), name)
	}
}

// While a run goes, every step shows, waiting or running; once its report
// is in, only the step runs that did not run show, under a count that
// includes the steps only the report holds.
func TestStepsWhileRunningAndAfter(t *testing.T) {
	t.Parallel()
	rs := runview.New(store.Run{ID: "r-1", Runbook: "wedge", Trigger: store.TriggerAlert, RequestedBy: "alertmanager"}, nil)
	rs.StepOrder = []string{"health", "chat", "counters"}
	rs.Event(engine.Event{Kind: engine.EventStepFinished, Run: &runbooks.TargetRun{Step: "health", Target: "router", Status: step.OK, Duration: 12 * time.Millisecond}})
	rs.Event(engine.Event{Kind: engine.EventStepStarted, Run: &runbooks.TargetRun{Step: "chat", Target: "router"}})
	m := rs.Message()
	require.Equal(t, chat.StatusRunning, m.Status)
	steps := m.Sections[len(m.Sections)-1]
	require.Equal(t, []string{"health on router: ok in 12ms", "chat on router: running", "counters: waiting"}, lineTexts(steps))

	rs.SetReport(&runbooks.Report{Outcome: runbooks.OutcomeInconclusive, Steps: []*runbooks.TargetRun{
		{Step: "health", Target: "router", Status: step.OK},
		{Step: "chat", Target: "router", Status: step.OK},
		{Step: "counters", Target: "decode", Status: step.Error, Error: "ssh: host key mismatch"},
	}})
	m = rs.Message()
	require.Equal(t, chat.StatusInconclusive, m.Status)
	steps = m.Sections[len(m.Sections)-1]
	require.Equal(t, "2 of 3 step runs completed.", steps.Text)
	require.Equal(t, []string{"counters on decode: error: ssh: host key mismatch"}, lineTexts(steps))
}

func lineTexts(s chat.Section) []string {
	var out []string
	for _, l := range s.Lines {
		out = append(out, l.Text)
	}
	return out
}

// A plan its guardrails refused when it was proposed shows why, and no
// Approve button: nobody is asked to approve what applying would refuse.
func TestBlockedPlanHasNoButtons(t *testing.T) {
	t.Parallel()
	plan := store.Plan{ID: "p-1", Hash: "abc", State: store.PlanProposed, Policy: store.Policy{Approvers: []string{"@sre"}}}
	body := remediation.PlanBody{Remediation: "restart", Deployment: "dsv4", Diagnosis: "decode_hung"}
	for name, tc := range map[string]struct {
		blocked string
		buttons int
	}{
		"appliable": {buttons: 3},
		"blocked":   {blocked: "the last remediation for decode_hung on dsv4 (plan p-0) ended rolled_back; once someone has looked, re-arm it", buttons: 0},
	} {
		body.Blocked = tc.blocked
		rs := runview.New(store.Run{ID: "r-1", Runbook: "wedge"}, nil)
		rs.SetReport(&runbooks.Report{Outcome: runbooks.OutcomeCritical})
		rs.Proposal, rs.Plan = &remediation.Proposal{Plan: plan, Body: body}, plan
		m := rs.Message()
		require.Len(t, m.Buttons, tc.buttons, name)
		text := m.Text()
		if tc.blocked != "" {
			require.Contains(t, text, "Cannot be applied: "+tc.blocked, name)
		} else {
			require.NotContains(t, text, "Cannot be applied", name)
		}
	}
}
