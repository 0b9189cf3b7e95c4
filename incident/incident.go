// Package incident gathers everything the store knows about one run — its
// report, the remediation plans it proposed with their diffs, approvals,
// actions and outcome, the alert that triggered it and the audit trail —
// into one Incident, and writes it as a Markdown postmortem draft. The web
// report pages (package web) and `runbot show --format markdown` both read
// a run through it, so the page and the draft never disagree.
package incident

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Incident is one run with everything recorded about it.
type Incident struct {
	// Run is the stored run; its Report field is emptied once decoded
	// into Report, so that the report is held (and redacted) once.
	Run store.Run `json:"run"`
	// Report is nil for a run that recorded none (it died first).
	Report *runbooks.Report `json:"report,omitempty"`
	// Alert is the alert that triggered the run, when one did.
	Alert *Alert `json:"alert,omitempty"`
	Plans []Plan `json:"plans,omitempty"`
	// Audit is the run's audit trail, oldest first, its plans' entries
	// included.
	Audit []store.AuditEvent `json:"audit,omitempty"`
}

// Alert is the part of a triggering alert a postmortem names.
type Alert struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	StartsAt    time.Time         `json:"startsAt,omitzero"`
	Status      string            `json:"status,omitempty"`
}

// Name is the alert's alertname label.
func (a *Alert) Name() string { return a.Labels["alertname"] }

// Plan is a remediation plan with what became of it.
type Plan struct {
	Plan store.Plan `json:"plan"`
	// Body is the plan as approvers were shown it: actions, diffs, the
	// verify steps and the rollback policy; nil when it cannot be read.
	Body      *remediation.PlanBody `json:"body,omitempty"`
	Approvals []store.Approval      `json:"approvals,omitempty"`
	Actions   []store.ActionRecord  `json:"actions,omitempty"`
	// Outcome is the message recorded with the plan's final state
	// ("verified: the symptom is gone", "verification failed: …"); empty
	// while the plan is not final.
	Outcome string `json:"outcome,omitempty"`
	// Verified is when the plan entered verifying; zero when it never did.
	Verified time.Time `json:"verified,omitzero"`
	// Ended is when the plan reached its final state.
	Ended time.Time `json:"ended,omitzero"`
}

// Store is what Load reads: the store's runs, plans, approvals, actions,
// audit log and work queue.
type Store interface {
	GetRun(ctx context.Context, idOrPrefix string) (store.Run, error)
	ListPlans(ctx context.Context, f store.PlanFilter) ([]store.Plan, error)
	Approvals(ctx context.Context, planID string) ([]store.Approval, error)
	Actions(ctx context.Context, planID string) ([]store.ActionRecord, error)
	Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditEvent, error)
	GetWork(ctx context.Context, id string) (store.Work, error)
}

// maxAudit bounds the audit entries one incident shows: a run's trail is
// tens of entries; a bound keeps one pathological run from making a page
// that no browser opens.
const maxAudit = 5000

// Load reads run id (or a unique prefix of it) and everything recorded
// about it.
func Load(ctx context.Context, st Store, id string) (*Incident, error) {
	return load(ctx, st, id, nil)
}

// LoadRedacted is Load with every string passed through r, as Redacted
// does. The report, which is most of a run's record, is redacted as the
// store keeps it, before it is decoded: a page shows a run with thousands
// of evidence lines at the cost of one decoding of it.
func LoadRedacted(ctx context.Context, st Store, id string, r *redact.Redactor) (*Incident, error) {
	if r == nil {
		return nil, errors.New("redact incident: no redactor")
	}
	inc, err := load(ctx, st, id, r)
	if err != nil {
		return nil, err
	}
	rep := inc.Report
	inc.Report = nil
	out, err := inc.Redacted(r)
	if err != nil {
		return nil, err
	}
	out.Report = rep
	return out, nil
}

// load is Load, with the stored report redacted by r when r is set.
func load(ctx context.Context, st Store, id string, r *redact.Redactor) (*Incident, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load incident %s: %w", id, err)
	}
	if r != nil && len(run.Report) > 0 {
		if run.Report, err = r.JSON(run.Report); err != nil {
			return nil, fmt.Errorf("load incident %s: %w", run.ID, err)
		}
	}
	inc := &Incident{Run: run}
	if len(run.Report) > 0 {
		if inc.Report, err = record.ReportOf(run); err != nil {
			return nil, fmt.Errorf("load incident %s: %w", run.ID, err)
		}
	}
	inc.Run.Report = nil
	plans, err := st.ListPlans(ctx, store.PlanFilter{RunID: run.ID})
	if err != nil {
		return nil, fmt.Errorf("load incident %s: plans: %w", run.ID, err)
	}
	// Plans come newest first; an incident reads oldest first.
	slices.Reverse(plans)
	audit, err := st.Audit(ctx, store.AuditFilter{RunID: run.ID, Limit: maxAudit})
	if err != nil {
		return nil, fmt.Errorf("load incident %s: audit: %w", run.ID, err)
	}
	inc.Audit = audit
	for _, p := range plans {
		ip, err := loadPlan(ctx, st, p, audit)
		if err != nil {
			return nil, fmt.Errorf("load incident %s: %w", run.ID, err)
		}
		inc.Plans = append(inc.Plans, ip)
	}
	if run.Trigger == store.TriggerAlert && run.WorkID != "" {
		inc.Alert = loadAlert(ctx, st, run.WorkID)
	}
	if err := hidePlanSecrets(inc, remediation.PlanSecrets(plans)); err != nil {
		return nil, fmt.Errorf("load incident %s: %w", run.ID, err)
	}
	return inc, nil
}

// hidePlanSecrets hides the values of the plans' secret params in what is
// shown of them. A plan keeps those values, as applying it needs them, and
// what applying recorded (an action's output, a message, the audit trail)
// may quote them; the run's own params and report are kept hidden already.
func hidePlanSecrets(inc *Incident, secrets []secret.Value) error {
	r := redact.Values(secrets...)
	if r == nil {
		return nil
	}
	for i := range inc.Plans {
		ip := &inc.Plans[i]
		if ip.Body != nil {
			ip.Body = ip.Body.Shown()
		}
		var err error
		if ip.Body, err = redactCopy(r, ip.Body); err != nil {
			return err
		}
		if ip.Actions, err = redactCopy(r, ip.Actions); err != nil {
			return err
		}
		ip.Outcome = r.Redact(ip.Outcome)
	}
	var err error
	inc.Audit, err = redactCopy(r, inc.Audit)
	return err
}

func redactCopy[T any](r *redact.Redactor, v T) (T, error) {
	var out T
	if err := r.Copy(v, &out); err != nil {
		return v, fmt.Errorf("hide secret params: %w", err)
	}
	return out, nil
}

func loadPlan(ctx context.Context, st Store, p store.Plan, audit []store.AuditEvent) (Plan, error) {
	ip := Plan{Plan: p}
	var body remediation.PlanBody
	if err := json.Unmarshal(p.Body, &body); err == nil {
		ip.Body = &body
	}
	ip.Plan.Body = nil
	var err error
	if ip.Approvals, err = st.Approvals(ctx, p.ID); err != nil {
		return ip, fmt.Errorf("approvals of plan %s: %w", p.ID, err)
	}
	if ip.Actions, err = st.Actions(ctx, p.ID); err != nil {
		return ip, fmt.Errorf("actions of plan %s: %w", p.ID, err)
	}
	for _, e := range audit {
		if e.PlanID != p.ID || e.Kind != store.AuditPlanState {
			continue
		}
		// The store records a transition as {"from", "to", "detail"},
		// detail being what the remediator said ({"message": …}).
		var d struct {
			To     store.PlanState `json:"to"`
			Detail struct {
				Message string `json:"message"`
			} `json:"detail"`
		}
		if json.Unmarshal(e.Detail, &d) != nil {
			continue
		}
		if d.To == store.PlanVerifying {
			ip.Verified = e.At
		}
		if final(d.To) {
			ip.Outcome, ip.Ended = d.Detail.Message, e.At
		}
	}
	return ip, nil
}

// final reports whether a plan in state s is settled for good.
func final(s store.PlanState) bool {
	switch s {
	case store.PlanDone, store.PlanRolledBack, store.PlanFailed, store.PlanNotNeeded,
		store.PlanDenied, store.PlanExpired, store.PlanSuperseded, store.PlanInterrupted:
		return true
	}
	return false
}

// loadAlert reads the alert the run's work carried. An incident without
// it is still an incident, so what cannot be read is left out.
func loadAlert(ctx context.Context, st Store, workID string) *Alert {
	w, err := st.GetWork(ctx, workID)
	if err != nil || len(w.Payload) == 0 {
		return nil
	}
	var payload struct {
		Trigger json.RawMessage `json:"trigger"`
	}
	if json.Unmarshal(w.Payload, &payload) != nil || len(payload.Trigger) == 0 {
		return nil
	}
	var a Alert
	if json.Unmarshal(payload.Trigger, &a) != nil || len(a.Labels) == 0 {
		return nil
	}
	return &a
}

// Redacted returns a copy of inc with every string passed through r, the
// redaction every chat message gets: what people are shown never holds a
// secret the bot knows to hide.
func (inc *Incident) Redacted(r *redact.Redactor) (*Incident, error) {
	if r == nil {
		return nil, errors.New("redact incident: no redactor")
	}
	out := new(Incident)
	if err := r.Copy(inc, out); err != nil {
		return nil, fmt.Errorf("redact incident %s: %w", inc.Run.ID, err)
	}
	return out, nil
}

// Title is the incident's one-line name: the runbook's title and the
// deployment.
func (inc *Incident) Title() string {
	t := inc.Run.Runbook
	if inc.Report != nil && inc.Report.Title != "" {
		t = inc.Report.Title
	}
	if d := inc.Run.Params["deployment"]; d != "" {
		t += " on " + d
	}
	return t
}
