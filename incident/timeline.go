package incident

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/store"
)

// Event is one moment of the incident's story, as a postmortem tells it.
type Event struct {
	At time.Time `json:"at"`
	// Kind is alert, run, diagnosis, plan, approval, action, verify or
	// resolution.
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Who is the person or system that acted, when one did.
	Who string `json:"who,omitempty"`
}

// Timeline is the incident's story on one time axis, oldest first: the
// alert, the run and its diagnosis, each plan with its approvals, actions,
// verification and how it ended.
func (inc *Incident) Timeline() []Event {
	var out []Event
	add := func(at time.Time, kind, who, format string, args ...any) {
		if !at.IsZero() {
			out = append(out, Event{At: at.UTC(), Kind: kind, Who: who, Text: fmt.Sprintf(format, args...)})
		}
	}
	if a := inc.Alert; a != nil {
		add(a.StartsAt, "alert", "", "alert %s started firing%s", dashed(a.Name()), annotation(a))
	}
	run := inc.Run
	add(run.StartedAt, "run", run.RequestedBy, "runbook %s started (%s trigger)", run.Runbook, run.Trigger)
	if rep := inc.Report; rep != nil {
		if len(rep.Diagnoses) == 0 {
			add(rep.VerdictAt, "diagnosis", "", "no diagnosis held (outcome %s)", rep.Outcome)
		}
		for _, d := range rep.Diagnoses {
			add(rep.VerdictAt, "diagnosis", "", "diagnosis %s: %s", d.ID, d.Summary)
		}
		add(rep.FinishedAt, "run", "", "run finished: %s, %d finding(s)", rep.Outcome, len(rep.Findings))
	} else if !run.FinishedAt.IsZero() {
		add(run.FinishedAt, "run", "", "run ended %s without a report", run.Status)
	}
	for _, p := range inc.Plans {
		pl := p.Plan
		add(pl.CreatedAt, "plan", pl.RequestedBy, "remediation %s proposed for %s on %s (plan %s, %s)", pl.Remediation, dashed(pl.Diagnosis), pl.Deployment, pl.ID, needs(pl.Policy))
		for _, a := range p.Approvals {
			verb := "approved"
			if a.Decision == store.Deny {
				verb = "denied"
			}
			note := ""
			if a.PlanHash != pl.Hash {
				note = " (a different version of the plan)"
			}
			add(a.At, "approval", a.User, "%s %s%s", verb, pl.Remediation, note)
		}
		for _, ac := range p.Actions {
			add(ac.StartedAt, "action", "", "action %d: %s on %s started", ac.Index+1, ac.Action, ac.Target)
			add(ac.FinishedAt, "action", "", "action %d: %s on %s %s", ac.Index+1, ac.Action, ac.Target, words(string(ac.State)))
		}
		add(p.Verified, "verify", "", "verification started: re-running %s", verifySteps(p))
		if !p.Ended.IsZero() {
			text := "remediation " + words(string(pl.State))
			if p.Outcome != "" {
				text += ": " + p.Outcome
			}
			add(p.Ended, "resolution", "", "%s", text)
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.At.Compare(b.At) })
	return out
}

func annotation(a *Alert) string {
	for _, k := range []string{"summary", "description"} {
		if v := a.Annotations[k]; v != "" {
			return ": " + v
		}
	}
	return ""
}

func needs(p store.Policy) string {
	s := fmt.Sprintf("needs %d approval(s)", p.Needed())
	if len(p.Approvers) > 0 {
		s += " from " + strings.Join(p.Approvers, ", ")
	}
	if p.TwoPerson {
		s += ", two-person rule"
	}
	return s
}

func verifySteps(p Plan) string {
	if p.Body == nil || len(p.Body.Verify) == 0 {
		return "the failing steps"
	}
	return strings.Join(p.Body.Verify, ", ")
}

// words shows a state name as words: rolled_back as "rolled back".
func words(s string) string { return strings.ReplaceAll(s, "_", " ") }

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
