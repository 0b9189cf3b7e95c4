package runview

import (
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// State is what one run's chat message shows: the run, its steps as
// they finish, its report, the proposed remediation with its approvals,
// and the progress and outcome of applying it. The message is re-rendered
// from it on every change, so it always shows the newest state. A State
// is not safe for concurrent use; the dispatch core guards its own.
type State struct {
	Run   store.Run
	Title string
	// StepOrder lists step ids in runbook order; Steps holds the runs
	// seen so far per step.
	StepOrder []string
	Steps     map[string][]*runbooks.TargetRun
	Report    *runbooks.Report
	// Problem says why the run, or proposing its remediation, failed.
	Problem   string
	Proposal  *remediation.Proposal
	Plan      store.Plan
	Approvals []store.Approval
	Apply     []remediation.ApplyEvent
	Applying  bool
	Result    *remediation.ApplyResult
	ApplyErr  string
	// Notes are small print under the message (a retry, a restart).
	Notes []string
	// Verdict is what the steps finished so far decided, shown while the
	// rest of the evidence arrives; VerdictAt is when it was settled.
	Verdict   []runbooks.DiagnosisResult
	VerdictAt time.Time
}

// New starts the state of run; rb, when known, gives the title and the
// order of the steps.
func New(run store.Run, rb *runbooks.Runbook) *State {
	rs := &State{Run: run, Title: run.Runbook, Steps: map[string][]*runbooks.TargetRun{}}
	if rb != nil {
		if rb.Title != "" {
			rs.Title = rb.Title
		}
		for _, s := range rb.Steps {
			rs.StepOrder = append(rs.StepOrder, s.ID)
		}
	}
	return rs
}

// Load rebuilds a run's state from the store: its stored report, and the
// proposal when one is given.
func Load(run store.Run, rb *runbooks.Runbook, prop *remediation.Proposal) (*State, error) {
	rs := New(run, rb)
	if len(run.Report) > 0 {
		rep, err := record.ReportOf(run)
		if err != nil {
			return nil, err
		}
		rs.SetReport(rep)
	}
	if prop != nil {
		rs.Proposal, rs.Plan = prop, prop.Plan
	}
	return rs, nil
}

// Stored is the message of a stored run as its stored report shows it,
// for a run no process here carries out.
func Stored(run store.Run, rb *runbooks.Runbook) (chat.Message, error) {
	rs, err := Load(run, rb, nil)
	if err != nil {
		return chat.Message{}, err
	}
	return rs.Message(), nil
}

// Event records a step starting or finishing on a target, or the verdict
// the steps finished so far settle.
func (rs *State) Event(ev engine.Event) {
	if ev.Kind == engine.EventVerdict {
		rs.Verdict, rs.VerdictAt = ev.Verdict, ev.At
		return
	}
	rs.putStep(ev.Run)
}

// putStep records the latest of one step on one target.
func (rs *State) putStep(run *runbooks.TargetRun) {
	runs := rs.Steps[run.Step]
	for i, tr := range runs {
		if tr.Target == run.Target && tr.Host == run.Host {
			runs[i] = run
			return
		}
	}
	rs.Steps[run.Step] = append(runs, run)
}

// SetReport records the run's final report and the step runs in it, so
// that a message built from a report alone (a direct run, a preview, a
// reload) counts the steps the report holds, not only those whose
// progress events were seen.
func (rs *State) SetReport(rep *runbooks.Report) {
	rs.Report = rep
	if rep == nil {
		return
	}
	for _, tr := range rep.Steps {
		rs.putStep(tr)
	}
}
