package dispatch

import (
	"sync"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// runState is what one run's chat message shows: the run, its steps as
// they finish, its report, the proposed remediation with its approvals, and
// the progress and outcome of applying it. The message is re-rendered from
// it on every change, so it always shows the newest state.
type runState struct {
	refs int // guarded by Dispatcher.mu

	mu    sync.Mutex
	run   store.Run
	title string
	// stepOrder lists step ids in runbook order; steps holds the runs
	// seen so far per step.
	stepOrder []string
	steps     map[string][]*runbooks.TargetRun
	report    *runbooks.Report
	// problem says why the run, or proposing its remediation, failed.
	problem   string
	proposal  *remediation.Proposal
	plan      store.Plan
	approvals []store.Approval
	apply     []remediation.ApplyEvent
	applying  bool
	result    *remediation.ApplyResult
	applyErr  string
	// notes are small print under the message (a retry, a restart).
	notes []string
	// verdict is what the steps finished so far decided, shown while the
	// rest of the evidence arrives; verdictAt is when it was settled.
	verdict   []runbooks.DiagnosisResult
	verdictAt time.Time
	live      *Live
}

func newRunState(run store.Run, rb *runbooks.Runbook) *runState {
	rs := &runState{run: run, title: run.Runbook, steps: map[string][]*runbooks.TargetRun{}}
	if rb != nil {
		if rb.Title != "" {
			rs.title = rb.Title
		}
		for _, s := range rb.Steps {
			rs.stepOrder = append(rs.stepOrder, s.ID)
		}
	}
	return rs
}

// loadRunState rebuilds a run's state from the store, for a click on a
// message posted before a restart or by a run this process no longer holds.
func loadRunState(run store.Run, rb *runbooks.Runbook, prop *remediation.Proposal) (*runState, error) {
	rs := newRunState(run, rb)
	if len(run.Report) > 0 {
		rep, err := record.ReportOf(run)
		if err != nil {
			return nil, err
		}
		rs.setReport(rep)
	}
	if prop != nil {
		rs.proposal, rs.plan = prop, prop.Plan
	}
	return rs, nil
}

// stepEvent records a step starting or finishing on a target.
func (rs *runState) stepEvent(ev engine.Event) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if ev.Kind == engine.EventVerdict {
		rs.verdict, rs.verdictAt = ev.Verdict, ev.At
		return
	}
	rs.putStep(ev.Run)
}

// putStep records the latest of one step on one target.
func (rs *runState) putStep(run *runbooks.TargetRun) {
	runs := rs.steps[run.Step]
	for i, tr := range runs {
		if tr.Target == run.Target && tr.Host == run.Host {
			runs[i] = run
			return
		}
	}
	rs.steps[run.Step] = append(runs, run)
}

// setReport records the run's final report and the step runs in it, so
// that a message built from a report alone (a direct run, a preview, a
// reload) counts the steps the report holds, not only those whose
// progress events this process saw. The caller holds rs.mu if the state
// is shared.
func (rs *runState) setReport(rep *runbooks.Report) {
	rs.report = rep
	if rep == nil {
		return
	}
	for _, tr := range rep.Steps {
		rs.putStep(tr)
	}
}

// publish renders the state and hands it to the live message.
func (rs *runState) publish() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.live != nil {
		rs.live.Set(rs.view())
	}
}

// StoredView is the message of a stored run as its stored report shows
// it, for a run no process here carries out.
func StoredView(run store.Run, rb *runbooks.Runbook) (chat.Message, error) {
	rs, err := loadRunState(run, rb, nil)
	if err != nil {
		return chat.Message{}, err
	}
	return rs.view(), nil
}

// View builds a run's message the way the dispatcher does, from its parts:
// for previews, and for tests of how a chat platform renders it.
type View struct{ rs *runState }

// NewView starts the view of run (rb, when known, gives the title and the
// order of the steps).
func NewView(run store.Run, rb *runbooks.Runbook) *View { return &View{rs: newRunState(run, rb)} }

// Title overrides the title; Steps the order of the steps.
func (v *View) Title(t string) *View { v.rs.title = t; return v }

// Steps sets the order the steps are listed in.
func (v *View) Steps(ids ...string) *View { v.rs.stepOrder = ids; return v }

// Event records a progress event as the run's message does.
func (v *View) Event(ev engine.Event) *View { v.rs.stepEvent(ev); return v }

// Report is the run's report, with its steps.
func (v *View) Report(rep *runbooks.Report) *View {
	v.rs.setReport(rep)
	return v
}

// Proposal is the remediation proposed, in the state plan, with its
// approvals.
func (v *View) Proposal(prop *remediation.Proposal, plan store.Plan, approvals []store.Approval) *View {
	v.rs.proposal, v.rs.plan, v.rs.approvals = prop, plan, approvals
	return v
}

// Applied is how applying it went so far, and its result when it ended.
func (v *View) Applied(events []remediation.ApplyEvent, res *remediation.ApplyResult) *View {
	v.rs.apply, v.rs.result = events, res
	return v
}

// Message renders the view.
func (v *View) Message() chat.Message { return v.rs.view() }

// PlanSections are the sections that show a plan (its diff and commands).
func PlanSections(body *remediation.PlanBody) []chat.Section { return planSections(body) }

// ShortHash is how a plan hash is shown.
func ShortHash(hash string) string { return short(hash) }
