// Package remediation proposes the fixes diagnoses ask for, records votes
// on them under the runbook's approval policy, and applies an approved
// plan with every guardrail (fresh precheck, exact plan hash, deployment
// lock, rate limit, circuit breaker), then verifies it and rolls back
// what it changed when verification fails.
package remediation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/store"
)

// Remediator proposes remediations, records votes on them, and applies an
// approved plan with every guardrail: a fresh look at the symptom, the plan
// re-made and compared with what was approved, a per-deployment lock, a
// rate limit, a circuit breaker, verification and rollback. Every state
// change is in the store before the side effect it announces.
type Remediator struct {
	Engine  *engine.Engine
	Store   store.Store
	Catalog *catalog.Catalog
	Groups  Groups
	// Directory, when set, resolves approver groups that are not in Groups
	// (Slack user groups). Set it before the first Vote.
	Directory Directory
	// Now is the clock; when nil, the store's (the database's clock),
	// or time.Now without a store.
	Now func() time.Time
	// Holder names this process in locks, e.g. "runbot@host/pid".
	Holder string
	// Observer, when set, is told how every remediation ended (metrics).
	Observer Observer
}

// Observer is told how every remediation applied ended, e.g. to export
// metrics. Implementations must be quick and safe for concurrent use.
type Observer interface {
	RemediationFinished(remediation string, res *ApplyResult)
}

// PlannedAction is one action on one target, as shown to approvers.
type PlannedAction struct {
	Index  int          `json:"index"`
	Action string       `json:"action"`
	Target string       `json:"target"`
	Plan   actions.Plan `json:"plan"`
	// RerunAfterRollback: if the plan is rolled back, this action runs
	// again afterwards (a restart, so the restored config is loaded).
	RerunAfterRollback bool `json:"rerun_after_rollback,omitempty"`
}

// PlanBody is the stored, hashed and shown content of a remediation plan.
// An approval is bound to its hash, so anything that can change what Apply
// does is in here.
type PlanBody struct {
	Runbook     string            `json:"runbook"`
	Remediation string            `json:"remediation"`
	Diagnosis   string            `json:"diagnosis"`
	Deployment  string            `json:"deployment"`
	Params      map[string]string `json:"params"`
	// Secret names the secret params among Params: a plan holds their
	// values, as applying it needs them, and hides them wherever it is
	// shown (Shown, Scrub).
	Secret   []string                `json:"secret,omitempty"`
	Actions  []PlannedAction         `json:"actions"`
	Verify   []string                `json:"verify"`
	Rollback runbooks.RollbackPolicy `json:"rollback"`
	Escalate string                  `json:"escalate,omitempty"`
	// Blocked says why the plan could not be applied when it was
	// proposed (its circuit breaker open, its rate limit reached) and
	// what to do about it; empty when it could. It is not part of the
	// hash: it is what the guardrails said then, not what Apply does,
	// and Apply checks them again.
	Blocked string `json:"blocked,omitempty"`
}

// Hash is the plan's content hash: what it would change (each action's
// target, the state it was planned against, its diff) and how success is
// judged. Cosmetic parts that differ between two plannings of the same
// change — a backup file's timestamp, a PID in a summary — are left out,
// so re-planning an unchanged target gives the same hash.
func (b *PlanBody) Hash() string {
	type action struct {
		Action, Target, Fingerprint, Diff string
		NoOp, Reversible                  bool
		RerunAfterRollback                bool `json:",omitempty"`
	}
	canon := struct {
		Runbook, Remediation, Diagnosis, Deployment, Rollback string
		Params                                                map[string]string
		Verify                                                []string
		Actions                                               []action
	}{b.Runbook, b.Remediation, b.Diagnosis, b.Deployment, string(b.Rollback), b.Params, b.Verify, nil}
	for _, a := range b.Actions {
		canon.Actions = append(canon.Actions, action{a.Action, a.Target, a.Plan.Fingerprint, a.Plan.Diff, a.Plan.NoOp, a.Plan.Reversible, a.RerunAfterRollback})
	}
	data, _ := json.Marshal(canon)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// RollbackPlan says, for approvers, what happens if verification fails:
// which changes are undone and which actions run again so that the undo
// takes effect.
func (b *PlanBody) RollbackPlan() string {
	if b.Rollback == runbooks.RollbackNever {
		return "If verification fails: nothing is rolled back; the changes stay and a human takes over."
	}
	var undo, rerun []string
	for i, a := range b.Actions {
		switch {
		case a.Plan.Reversible && !a.Plan.NoOp:
			undo = append(undo, fmt.Sprint(i+1))
		case a.RerunAfterRollback && len(undo) > 0:
			rerun = append(rerun, fmt.Sprint(i+1))
		}
	}
	if len(undo) == 0 {
		return "If verification fails: nothing can be rolled back (no action is reversible); a human takes over."
	}
	s := "If verification fails: undo action(s) " + strings.Join(undo, ", ")
	if len(rerun) > 0 {
		s += ", then run action(s) " + strings.Join(rerun, ", ") + " again so the restored state takes effect"
	}
	return s + "."
}

// Diff joins the diffs of every action, for approvers.
func (b *PlanBody) Diff() string {
	var parts []string
	for _, a := range b.Actions {
		if a.Plan.Diff != "" {
			parts = append(parts, a.Plan.Diff)
		}
	}
	return strings.Join(parts, "\n")
}

// Proposal is a stored plan waiting for approval.
type Proposal struct {
	Plan store.Plan
	Body PlanBody
}

func (r *Remediator) now() time.Time {
	switch {
	case r.Now != nil:
		return r.Now()
	case r.Store != nil:
		// Approval windows are judged on the database's clock, as the
		// store writes them, whatever this host's clock says.
		return r.Store.Now()
	}
	return time.Now()
}

// remediationFor returns the remediation a report's diagnoses propose.
func remediationFor(rb *runbooks.Runbook, rep *runbooks.Report) (*runbooks.Remediation, *runbooks.DiagnosisResult) {
	for i := range rep.Diagnoses {
		d := &rep.Diagnoses[i]
		if d.Remediation != "" {
			return rb.Remediation(d.Remediation), d
		}
	}
	return nil, nil
}

// Plan makes the plan a report's diagnosis proposes, reading the targets'
// current state but changing nothing. It returns nil when no diagnosis
// proposes a remediation.
func (r *Remediator) Plan(ctx context.Context, p *engine.Prepared, rep *runbooks.Report) (*PlanBody, error) {
	rem, diag := remediationFor(p.Runbook, rep)
	if rem == nil {
		return nil, nil
	}
	return r.plan(ctx, p, rem, diag.ID)
}

func (r *Remediator) plan(ctx context.Context, p *engine.Prepared, rem *runbooks.Remediation, diagnosis string) (*PlanBody, error) {
	body := &PlanBody{
		Runbook: p.Runbook.Name, Remediation: rem.Name, Diagnosis: diagnosis, Deployment: p.Deployment(),
		Params: p.Text, Secret: p.Runbook.SecretNames(), Verify: rem.Verify, Rollback: rem.Rollback, Escalate: rem.Escalate,
	}
	idx := 0
	for _, as := range rem.Actions {
		at := as.ActionType
		targets, err := r.Engine.Resolve(ctx, p.Runbook, as.Targets, p.Params)
		if err != nil {
			return nil, fmt.Errorf("plan %s: %w", rem.Name, err)
		}
		for _, t := range targets {
			env, err := r.actionEnv(at, as, p, t)
			if err != nil {
				return nil, fmt.Errorf("plan %s: action %s on %s: %w", rem.Name, as.Action, t.Name(), err)
			}
			actx, cancel := context.WithTimeoutCause(ctx, planTimeout(as), fmt.Errorf("planning %s on %s took longer than %s", as.Action, t.Name(), planTimeout(as)))
			pl, err := at.Action.Plan(actx, env)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("plan %s: action %s on %s: %w", rem.Name, as.Action, t.Name(), err)
			}
			body.Actions = append(body.Actions, PlannedAction{Index: idx, Action: as.Action, Target: t.Name(), Plan: pl,
				RerunAfterRollback: as.RerunAfterRollback && rem.Rollback != runbooks.RollbackNever})
			idx++
		}
	}
	return body, nil
}

func planTimeout(as *runbooks.ActionStep) time.Duration {
	return min(as.Timeout, 30*time.Second) + 5*time.Second
}

func (r *Remediator) actionEnv(at actions.Type, as *runbooks.ActionStep, p *engine.Prepared, t target.Target) (actions.Env, error) {
	args, err := engine.RenderArgs(at.Spec, as.With, runbooks.ArgData(p.Params, t, "", r.now()))
	if err != nil {
		return actions.Env{}, err
	}
	return actions.Env{Target: t, Args: args, Now: r.now}, nil
}

// Propose stores the plan a report's diagnosis proposes, for approval. It
// returns nil when there is nothing to propose.
func (r *Remediator) Propose(ctx context.Context, p *engine.Prepared, rep *runbooks.Report, requestedBy string) (*Proposal, error) {
	rem, diag := remediationFor(p.Runbook, rep)
	if rem == nil {
		return nil, nil
	}
	body, err := r.plan(ctx, p, rem, diag.ID)
	if err != nil {
		return nil, err
	}
	if body.Blocked, err = r.blocked(ctx, body, rem); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	pol := store.Policy{
		Approvers: rem.Approval.Approvers, MinApprovals: rem.Approval.MinApprovals, TwoPerson: rem.Approval.TwoPerson,
	}
	if rem.Approval.Expires > 0 {
		pol.ExpiresAt = r.now().Add(rem.Approval.Expires)
	}
	plan, _, err := r.Store.CreatePlan(ctx, store.Plan{
		RunID: rep.RunID, Remediation: rem.Name, Diagnosis: diag.ID, Deployment: body.Deployment,
		Hash: body.Hash(), Body: raw, RequestedBy: requestedBy, Policy: pol,
	})
	if err != nil {
		return nil, fmt.Errorf("propose %s: %w", rem.Name, err)
	}
	return &Proposal{Plan: plan, Body: *body}, nil
}

// LoadProposal reads a stored plan.
func (r *Remediator) LoadProposal(ctx context.Context, planID string) (*Proposal, error) {
	plan, err := r.Store.GetPlan(ctx, planID)
	if err != nil {
		return nil, err
	}
	var body PlanBody
	if err := json.Unmarshal(plan.Body, &body); err != nil {
		return nil, fmt.Errorf("decode plan %s: %w", planID, err)
	}
	return &Proposal{Plan: plan, Body: body}, nil
}

// Vote records one person's decision on the plan hash they were shown.
// A person the policy does not name is refused here; the store refuses the
// rest (expired, changed plan, self-approval under the two-person rule,
// closed) atomically, so a double click counts once.
func (r *Remediator) Vote(ctx context.Context, planID, user string, approve bool, shownHash string) (store.ApprovalResult, error) {
	plan, err := r.Store.GetPlan(ctx, planID)
	if err != nil {
		return store.ApprovalResult{}, err
	}
	decision := store.Deny
	if approve {
		decision = store.Approve
	}
	ok, err := r.MayApprove(ctx, plan.Policy.Approvers, user)
	if err != nil {
		return store.ApprovalResult{Plan: plan}, &store.ApprovalError{PlanID: plan.ID, User: user, Reason: store.RefusedPolicy, State: plan.State, Err: err}
	}
	if !ok {
		detail, _ := json.Marshal(map[string]any{"decision": decision, "reason": "not an approver"})
		_, _ = r.Store.AppendAudit(ctx, store.AuditEvent{At: r.now(), RunID: plan.RunID, PlanID: plan.ID, Kind: store.AuditApprovalRefused, Actor: user, Detail: detail})
		return store.ApprovalResult{Plan: plan}, &store.ApprovalError{PlanID: plan.ID, User: user, Reason: store.RefusedPolicy, State: plan.State, Err: ErrNotApprover, Detail: "approvers: " + strings.Join(plan.Policy.Approvers, ", ")}
	}
	return r.Store.RecordApproval(ctx, store.Approval{PlanID: planID, User: user, Decision: decision, PlanHash: shownHash, At: r.now()})
}

// minLockTTL is how long a deployment lock lasts at least: it is the
// backstop for a holder that died without releasing it and whose death no
// sweep noticed.
const minLockTTL = 30 * time.Minute

// lockTTL is how long an apply under ctx holds its deployment's lock: at
// least until ctx's deadline, plus a minute for the release, so that the
// lock cannot lapse under a live apply (an apply_timeout above 30 minutes)
// and let a second remediation of the same deployment start beside it.
func lockTTL(ctx context.Context) time.Duration {
	ttl := minLockTTL
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) + time.Minute; left > ttl {
			ttl = left
		}
	}
	return ttl
}

// ApplyEvent reports progress of an apply.
type ApplyEvent struct {
	Stage  ApplyStage
	Detail string
}

// ApplyStage says which part of applying a plan an ApplyEvent is about.
type ApplyStage string

const (
	// StagePrecheck: the runbook runs again to confirm the diagnosis.
	StagePrecheck ApplyStage = "precheck"
	// StageAction: an action is applied.
	StageAction ApplyStage = "action"
	// StageResult: what an applied action reported.
	StageResult ApplyStage = "result"
	// StageSettle: the wait before verifying.
	StageSettle ApplyStage = "settle"
	// StageVerify: the verify steps run.
	StageVerify ApplyStage = "verify"
	// StageRollback: a change is undone, or an action runs again so that
	// the rollback takes effect.
	StageRollback ApplyStage = "rollback"
)

// ApplyResult is the outcome of applying a plan.
type ApplyResult struct {
	PlanID    string
	State     store.PlanState
	Recovered bool
	// Message says in one sentence what happened.
	Message string
	Actions []store.ActionRecord
	// Precheck and Verify are the reports of the runs before and after.
	Precheck *runbooks.Report
	Verify   *runbooks.Report
	// Unverified says why verification did not show the symptom gone,
	// naming the step, diagnosis, finding or verify_when that failed;
	// empty when it did.
	Unverified string `json:",omitempty"`
}

// Apply carries out an approved plan. See Remediator for the guardrails.
func (r *Remediator) Apply(ctx context.Context, planID, actor string, progress func(ApplyEvent)) (*ApplyResult, error) {
	a, res, err := r.claim(ctx, planID, actor, progress)
	if err != nil {
		return res, err
	}
	lock, err := r.Store.Acquire(ctx, "deployment/"+a.body.Deployment, r.holder(a.plan.ID), lockTTL(ctx))
	if err != nil {
		return a.finish(ctx, store.PlanFailed, "another remediation holds the deployment", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), 10*time.Second, errors.New("releasing the deployment lock took too long"))
		defer cancel()
		_ = r.Store.Release(rctx, lock)
	}()

	if err := r.guardrails(ctx, a.plan, a.body, a.rem); err != nil {
		return a.finish(ctx, store.PlanFailed, err.Error(), err)
	}
	if stop, res, err := a.confirm(ctx); stop {
		return res, err
	}
	// What is applied is the plan the approvers saw, not the re-made one:
	// the hashes agree on every change, but the approved plan is the one
	// whose backup file names (and summaries) were shown, so those are the
	// names the apply creates and the record keeps.
	applied, failedAt, applyErr := r.applyActions(ctx, a.plan.ID, a.p, a.rem, &a.body, a.say)
	a.res.Actions = r.shownActions(ctx, &a.body, a.plan.ID)
	if applyErr != nil {
		rb := r.rollback(ctx, a.plan.ID, applied, a.say)
		a.res.Actions = r.shownActions(ctx, &a.body, a.plan.ID)
		act := a.body.Actions[failedAt]
		if actions.OutcomeUnknown(applyErr) {
			return a.finish(ctx, store.PlanFailed, fmt.Sprintf("action %d (%s on %s) did not answer (%v): whether it took effect on the target is NOT KNOWN; check the target before anything is approved again; %s",
				failedAt, act.Action, act.Target, applyErr, rb.message()), applyErr)
		}
		return a.finish(ctx, store.PlanFailed, fmt.Sprintf("action %d (%s on %s) failed; %s", failedAt, act.Action, act.Target, rb.message()), applyErr)
	}
	if allNoOp(&a.body) {
		return a.finish(ctx, store.PlanNotNeeded, "every target was already in the wanted state", nil)
	}
	return a.verify(ctx, applied)
}

// applying is one plan being applied: what the steps of Apply share.
type applying struct {
	r     *Remediator
	plan  store.Plan
	body  PlanBody
	rb    *runbooks.Runbook
	rem   *runbooks.Remediation
	p     *engine.Prepared
	actor string
	res   *ApplyResult
	// scrub hides the plan's secret params in what applying says and
	// keeps, as the plan shown for approval did; say tells progress.
	scrub func(string) string
	say   func(stage ApplyStage, format string, args ...any)
}

// claim loads the plan, checks that it is approved and not expired and
// that its runbook still has the remediation, prepares the run, and moves
// the plan to applying: of two clicks, one claims it and the other stops
// here.
func (r *Remediator) claim(ctx context.Context, planID, actor string, progress func(ApplyEvent)) (*applying, *ApplyResult, error) {
	prop, err := r.LoadProposal(ctx, planID)
	if err != nil {
		return nil, nil, err
	}
	plan, body := prop.Plan, prop.Body
	a := &applying{r: r, plan: plan, body: body, actor: actor, scrub: body.Scrubber(), res: &ApplyResult{PlanID: plan.ID, State: plan.State}}
	a.say = func(stage ApplyStage, format string, args ...any) {
		if progress != nil {
			progress(ApplyEvent{Stage: stage, Detail: a.scrub(fmt.Sprintf(format, args...))})
		}
	}
	if plan.State != store.PlanApproved {
		return nil, a.res, fmt.Errorf("apply plan %s (state %s): %w", plan.ID, plan.State, ErrNotApproved)
	}
	if !plan.Policy.ExpiresAt.IsZero() && !r.now().Before(plan.Policy.ExpiresAt) {
		if err := r.move(ctx, plan, store.PlanApproved, store.PlanExpired, actor, map[string]any{"message": "approval expired before it was applied"}); err != nil {
			return nil, a.res, err
		}
		a.res.State = store.PlanExpired
		return nil, a.res, fmt.Errorf("apply plan %s: %w", plan.ID, ErrApprovalExpired)
	}
	if a.rb, err = r.Catalog.Get(body.Runbook); err != nil {
		return nil, a.res, fmt.Errorf("apply plan %s: %w", plan.ID, err)
	}
	if a.rem = a.rb.Remediation(body.Remediation); a.rem == nil {
		return nil, a.res, fmt.Errorf("apply plan %s: runbook %s no longer has remediation %s", plan.ID, a.rb.Name, body.Remediation)
	}
	if a.p, err = r.Engine.Prepare(ctx, a.rb, body.Params); err != nil {
		return nil, a.res, fmt.Errorf("apply plan %s: %w", plan.ID, err)
	}
	if err := r.move(ctx, plan, store.PlanApproved, store.PlanApplying, actor, nil); err != nil {
		return nil, a.res, err
	}
	a.res.State = store.PlanApplying
	return a, a.res, nil
}

// finish moves the plan from where it is to its last state, with msg
// (scrubbed) as the record's and the result's message, and tells the
// observer. cause, when set, is the error Apply returns, wrapped.
func (a *applying) finish(ctx context.Context, to store.PlanState, msg string, cause error) (*ApplyResult, error) {
	msg = a.scrub(msg)
	detail := map[string]any{"message": msg}
	if err := a.r.moveEnd(ctx, a.plan, a.res.State, to, a.actor, detail); err != nil {
		return a.res, err
	}
	a.res.State, a.res.Message = to, msg
	if a.r.Observer != nil {
		a.r.Observer.RemediationFinished(a.body.Remediation, a.res)
	}
	if cause != nil {
		if msg == a.scrub(cause.Error()) {
			return a.res, fmt.Errorf("apply plan %s: %w", a.plan.ID, cause)
		}
		return a.res, fmt.Errorf("apply plan %s: %s: %w", a.plan.ID, msg, cause)
	}
	return a.res, nil
}

// confirm is the fresh look before anything changes: the runbook again
// (the diagnosis must still hold), the preconditions, and the plan made
// again, whose hash must be the one approved. stop says Apply ends here,
// with res and err.
func (a *applying) confirm(ctx context.Context) (stop bool, res *ApplyResult, err error) {
	body := a.body
	a.say(StagePrecheck, "re-running %s to confirm %s still holds", a.rb.Name, body.Diagnosis)
	pre := a.r.Engine.Run(ctx, a.p, engine.RunOptions{Trigger: runbooks.TriggerPrecheck})
	a.res.Precheck = a.p.Shown(pre)
	if !hasDiagnosis(pre, body.Diagnosis) {
		// Absent because it was checked and is gone, or because the checks
		// could not run: only the first means the fix is not needed.
		if pre.Unobserved() {
			res, err = a.finish(ctx, store.PlanFailed, "could not confirm "+body.Diagnosis+" before applying (some steps did not run); nothing was done", ErrPreconditionFailed)
			return true, res, err
		}
		res, err = a.finish(ctx, store.PlanNotNeeded, fmt.Sprintf("%s no longer holds; nothing was done", body.Diagnosis), nil)
		return true, res, err
	}
	for _, c := range a.rem.Preconditions {
		ok, cerr := a.rb.EvalCondition(c, pre, a.p.Params, a.r.now())
		if cerr != nil || !ok {
			res, err = a.finish(ctx, store.PlanNotNeeded, fmt.Sprintf("precondition %q does not hold; nothing was done", c.Source), nil)
			return true, res, err
		}
	}
	fresh, err := a.r.plan(ctx, a.p, a.rem, body.Diagnosis)
	if err != nil {
		res, err = a.finish(ctx, store.PlanFailed, "could not re-make the plan", err)
		return true, res, err
	}
	if body.Hash() != a.plan.Hash {
		// The stored plan is what gets applied; one that no longer hashes
		// to what was approved was not approved.
		res, err = a.finish(ctx, store.PlanFailed, "the stored plan does not match its approved hash; nothing was done", ErrPlanChanged)
		return true, res, err
	}
	if fresh.Hash() != a.plan.Hash {
		res, err = a.finish(ctx, store.PlanFailed, "the target changed since approval (e.g. the file was edited); propose again", ErrPlanChanged)
		return true, res, err
	}
	return false, nil, nil
}

// verify moves the plan to verifying, waits for the service to settle,
// runs the verify steps, and ends the plan done, rolled back (when the
// remediation says so and something can be undone) or failed.
func (a *applying) verify(ctx context.Context, applied []appliedAction) (*ApplyResult, error) {
	if err := a.r.move(ctx, a.plan, store.PlanApplying, store.PlanVerifying, a.actor, nil); err != nil {
		return a.res, err
	}
	a.res.State = store.PlanVerifying
	rem := a.rem
	if rem.Settle > 0 {
		a.say(StageSettle, "waiting %s for the service to settle", rem.Settle)
		select {
		case <-time.After(rem.Settle):
		case <-ctx.Done():
		}
	}
	if ctx.Err() == nil {
		a.say(StageVerify, "re-running %s", strings.Join(rem.Verify, ", "))
		ver := a.r.Engine.Run(ctx, a.p, engine.RunOptions{Trigger: runbooks.TriggerVerify, Only: rem.Verify})
		if ctx.Err() == nil {
			return a.judge(ctx, ver, applied)
		}
	}
	// Stopped (the lease fence, a shutdown past its grace): a verify cut
	// short says nothing about the fix, so it is neither judged failed nor
	// rolled back. This process acts on no target once its apply is
	// stopped: another replica may hold the deployment by then.
	cause := context.Cause(ctx)
	return a.finish(ctx, store.PlanFailed, fmt.Sprintf("verification was cut short (%v): the fix stays applied and was NOT rolled back, and whether it worked is NOT KNOWN; check the target before anything is approved again", cause), cause)
}

// judge ends the plan on the verify run ver: done when the symptom is
// gone, else rolled back (when the remediation says so and something can
// be undone) or failed.
func (a *applying) judge(ctx context.Context, ver *runbooks.Report, applied []appliedAction) (*ApplyResult, error) {
	rem := a.rem
	a.res.Verify = a.p.Shown(ver)
	why := a.r.unverified(a.rb, rem, ver, a.res.Verify, a.p, a.body.Diagnosis)
	a.res.Recovered = why == ""
	if a.res.Recovered {
		msg := "verified: the symptom is gone"
		if left := stillWarned(ver, a.res.Verify); left != "" {
			msg += "; " + left
		}
		return a.finish(ctx, store.PlanDone, msg, nil)
	}
	a.res.Unverified = why
	msg := "verification failed: the symptom is still there: " + why
	if rem.Rollback == runbooks.RollbackOnFailedVerify && anyReversible(&a.body) {
		rb := a.r.rollback(ctx, a.plan.ID, applied, a.say)
		a.res.Actions = a.r.shownActions(ctx, &a.body, a.plan.ID)
		msg += "; " + rb.message() + " (escalate to a human)"
		if !rb.complete() {
			// A rollback the fence or a shutdown stopped says so to the
			// caller too.
			return a.finish(ctx, store.PlanFailed, msg, context.Cause(ctx))
		}
		return a.finish(ctx, store.PlanRolledBack, msg, nil)
	}
	return a.finish(ctx, store.PlanFailed, msg+" (escalate to a human)", nil)
}

// shownActions reads what the plan's actions recorded, as it may be
// shown: the store keeps what an action printed as it was (a rollback
// after a restart reads it), the plan's secret params in it included. A
// read that fails leaves none.
func (r *Remediator) shownActions(ctx context.Context, body *PlanBody, planID string) []store.ActionRecord {
	// A stopped apply still shows what it did.
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), 10*time.Second, errors.New("reading the plan's actions took too long"))
	defer cancel()
	recs, err := r.Store.Actions(ctx, planID)
	if err != nil || len(body.Secret) == 0 {
		return recs
	}
	var out []store.ActionRecord
	if err := redact.Values(body.Secrets()...).Copy(recs, &out); err != nil {
		return nil
	}
	return out
}

func (r *Remediator) holder(planID string) string {
	if r.Holder != "" {
		return r.Holder + " plan " + planID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("runbot@%s/%d plan %s", host, os.Getpid(), planID)
}

// endTries and endTryTimeout bound the writing of an apply's end: about
// a minute and a half of tries, 1 s, 2 s, 4 s … 15 s apart, enough for a
// promotion or a short partition.
const (
	endTries      = 9
	endTryTimeout = 10 * time.Second
)

// moveEnd writes how an apply ended on a context of its own. The apply's
// context may be the reason it ended: the lease fence cancels it to stop
// acting on targets before another replica can take over, and a shutdown
// does too. Neither is a reason to leave the plan applying: if the lease
// then holds after all (renewed in time), no other replica takes the plan
// over and it would stay applying for good. The write is tried again
// while the store fails; a conflict means another replica ended the plan
// first (it found this one's lease lapsed), which is the record then.
func (r *Remediator) moveEnd(ctx context.Context, plan store.Plan, from, to store.PlanState, actor string, detail map[string]any) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for try, wait := 1, time.Second; ; try, wait = try+1, min(2*wait, 15*time.Second) {
		tctx, cancel := context.WithTimeoutCause(ctx, endTryTimeout, errors.New("writing how the apply ended took too long"))
		err = r.move(tctx, plan, from, to, actor, detail)
		cancel()
		var conflict *store.StateConflictError
		if err == nil || errors.As(err, &conflict) || try == endTries {
			return err
		}
		time.Sleep(wait)
	}
}

func (r *Remediator) move(ctx context.Context, plan store.Plan, from, to store.PlanState, actor string, detail map[string]any) error {
	var raw json.RawMessage
	if detail != nil {
		raw, _ = json.Marshal(detail)
	}
	if _, err := r.Store.TransitionPlan(ctx, store.Transition{PlanID: plan.ID, From: from, To: to, Actor: actor, Detail: raw}); err != nil {
		return fmt.Errorf("plan %s: %s -> %s: %w", plan.ID, from, to, err)
	}
	return nil
}

// blocked says why a plan just made could not be applied now, so that
// nobody is asked to approve what Apply would refuse: the circuit breaker
// of its diagnosis is open (with the command that re-arms it), or its
// remediation reached its rate limit. A lock held by another remediation
// is not a reason: it is released within minutes.
func (r *Remediator) blocked(ctx context.Context, body *PlanBody, rem *runbooks.Remediation) (string, error) {
	open, err := r.openBreaker(ctx, body.Deployment, body.Diagnosis, "")
	if err != nil {
		return "", fmt.Errorf("check circuit breaker: %w", err)
	}
	if open != nil {
		return fmt.Sprintf("the last remediation for %[1]s on %[2]s (plan %[3]s) ended %[4]s; once someone has looked, re-arm it with `runbot rearm %[2]s %[1]s --as USER` or `/runbot rearm %[2]s %[1]s`, then run the runbook again for a new plan",
			body.Diagnosis, body.Deployment, open.ID, open.State), nil
	}
	if rem.MaxPerHour > 0 {
		n, err := r.Store.CountApplied(ctx, store.AppliedFilter{Deployment: body.Deployment, Remediation: body.Remediation, Since: r.now().Add(-time.Hour)})
		if err != nil {
			return "", fmt.Errorf("check rate limit: %w", err)
		}
		if n >= rem.MaxPerHour {
			return fmt.Sprintf("%s already ran %d times on %s in the last hour (max_per_hour %d); run the runbook again later for a new plan", body.Remediation, n, body.Deployment, rem.MaxPerHour), nil
		}
	}
	return "", nil
}

// guardrails enforces the rate limit and the circuit breaker.
func (r *Remediator) guardrails(ctx context.Context, plan store.Plan, body PlanBody, rem *runbooks.Remediation) error {
	if rem.MaxPerHour > 0 {
		n, err := r.Store.CountApplied(ctx, store.AppliedFilter{Deployment: body.Deployment, Remediation: body.Remediation, Since: r.now().Add(-time.Hour)})
		if err != nil {
			return fmt.Errorf("check rate limit: %w", err)
		}
		// The count includes this plan, which is applying already.
		if n > rem.MaxPerHour {
			return fmt.Errorf("%w: %s ran %d times on %s in the last hour (limit %d)", ErrRateLimited, body.Remediation, n-1, body.Deployment, rem.MaxPerHour)
		}
	}
	// The circuit breaker looks at the last plan for this diagnosis that
	// actually ran actions: if it did not fix things, repeating it is
	// refused until a human looks and re-arms it (Rearm).
	open, err := r.openBreaker(ctx, body.Deployment, body.Diagnosis, plan.ID)
	if err != nil {
		return fmt.Errorf("check circuit breaker: %w", err)
	}
	if open != nil {
		return fmt.Errorf("%w (plan %s ended %s; once someone has looked, `/runbot rearm %[4]s %[5]s` or `runbot rearm %[4]s %[5]s` re-arms it)",
			ErrCircuitOpen, open.ID, open.State, body.Deployment, body.Diagnosis)
	}
	return nil
}

// applyActions runs the plan's actions in order, each recorded as started
// before it runs. It returns what was applied — including the action that
// failed, which may have changed part of its target — and the index that
// failed.
func (r *Remediator) applyActions(ctx context.Context, planID string, p *engine.Prepared, rem *runbooks.Remediation, body *PlanBody, say func(ApplyStage, string, ...any)) ([]appliedAction, int, error) {
	var done []appliedAction
	targets := map[string][]target.Target{}
	for i, pa := range body.Actions {
		as := actionStepFor(rem, pa)
		at := as.ActionType
		if as.Action != pa.Action {
			// The plan is applied as it was shown: its own action, on
			// the targets of the step it was planned from.
			at, _ = actions.Default.Lookup(pa.Action)
		}
		if _, ok := targets[pa.Action+fmt.Sprint(as.Pos)]; !ok {
			ts, err := r.Engine.Resolve(ctx, p.Runbook, as.Targets, p.Params)
			if err != nil {
				return done, i, err
			}
			targets[pa.Action+fmt.Sprint(as.Pos)] = ts
		}
		var t target.Target
		for _, c := range targets[pa.Action+fmt.Sprint(as.Pos)] {
			if c.Name() == pa.Target {
				t = c
			}
		}
		env, err := r.actionEnv(at, as, p, t)
		if err != nil {
			return done, i, err
		}
		if _, err := r.Store.StartAction(ctx, store.ActionRecord{PlanID: planID, Index: i, Target: pa.Target, Action: pa.Action}); err != nil {
			return done, i, fmt.Errorf("record action start: %w", err)
		}
		say(StageAction, "%s", pa.Plan.Summary)
		actx, cancel := context.WithTimeoutCause(ctx, as.Timeout, fmt.Errorf("action %s on %s timed out after %s", pa.Action, pa.Target, as.Timeout))
		ap, err := at.Action.Apply(actx, env, pa.Plan)
		cancel()
		a := appliedAction{index: i, env: env, typ: at, applied: ap, planned: pa, timeout: as.Timeout}
		if err != nil {
			detail, _ := json.Marshal(map[string]any{"error": err.Error(), "outcome_unknown": actions.OutcomeUnknown(err)})
			_, _ = r.Store.SetActionState(ctx, planID, i, store.ActionFailed, detail)
			// What a failed Apply got done is undone (or run again) too.
			return append(done, a), i, err
		}
		detail, _ := json.Marshal(ap)
		if _, err := r.Store.SetActionState(ctx, planID, i, store.ActionDone, detail); err != nil {
			return done, i, fmt.Errorf("record action result: %w", err)
		}
		if ap.Detail != "" {
			// What the action reported (a command's exit and first line of
			// output) is shown where it ran, not only in the audit trail.
			say(StageResult, "%s", ap.Detail)
		}
		done = append(done, a)
	}
	return done, -1, nil
}

type appliedAction struct {
	index   int
	env     actions.Env
	typ     actions.Type
	applied actions.Applied
	planned PlannedAction
	// timeout is the action step's, which a rerun gets too.
	timeout time.Duration
}

// rolledBack is what a rollback did, for the plan's outcome message.
type rolledBack struct {
	undone, rerun []string // summaries of what was undone and run again
	failed        []string // what could not be undone or run again, and why
	// stopped says what the rollback did not do because the apply was
	// stopped; empty when it ran to its end.
	stopped string
}

// complete says the rollback did all it had to.
func (rb rolledBack) complete() bool { return len(rb.failed) == 0 && rb.stopped == "" }

// message says in one clause what the rollback did.
func (rb rolledBack) message() string {
	var parts []string
	switch {
	case len(rb.undone) > 0:
		parts = append(parts, fmt.Sprintf("%d change(s) rolled back", len(rb.undone)))
	case rb.complete():
		parts = append(parts, "nothing needed rolling back")
	}
	if len(rb.rerun) > 0 {
		parts = append(parts, fmt.Sprintf("%d action(s) run again so the rollback takes effect", len(rb.rerun)))
	}
	if len(rb.failed) > 0 {
		parts = append(parts, "ROLLBACK INCOMPLETE: "+strings.Join(rb.failed, "; "))
	}
	if rb.stopped != "" {
		parts = append(parts, rb.stopped)
	}
	return strings.Join(parts, ", ")
}

// rollback undoes reversible changes, newest first. Undoing a config edit
// is not enough while the process still runs with the edited config: the
// actions marked rerun_after_rollback (restarts) that came after the
// earliest undone change then run again, in plan order, so the processes
// load what was restored. A rerun runs only when every undo succeeded;
// otherwise it would load a half-restored config.
//
// A stopped apply (its context ended: the lease fence, a shutdown past its
// grace) rolls nothing back, and a rollback stops where it is when the
// apply is stopped: this process then acts on no target again, because
// another replica may hold the deployment by then, and a rollback that a
// shutdown cuts off would leave the target half-restored anyway.
func (r *Remediator) rollback(ctx context.Context, planID string, done []appliedAction, say func(ApplyStage, string, ...any)) rolledBack {
	var out rolledBack
	bg := context.WithoutCancel(ctx)
	record := func(index int, to store.ActionState, detail map[string]any) {
		raw, _ := json.Marshal(detail)
		_, _ = r.Store.SetActionState(bg, planID, index, to, raw)
	}
	stopped := func(next string) bool {
		if ctx.Err() == nil {
			return false
		}
		out.stopped = fmt.Sprintf("STOPPED before %s: the apply was stopped (%v), and this process acts on no target any more, so the rest is NOT rolled back", next, context.Cause(ctx))
		return true
	}
	earliest := -1 // the earliest change an undo was tried on
	for i := len(done) - 1; i >= 0; i-- {
		a := done[i]
		if !a.applied.Plan.Reversible || !a.applied.Changed {
			continue
		}
		say(StageRollback, "rolling back: %s", a.applied.Plan.Summary)
		if stopped("undoing " + a.applied.Plan.Summary) {
			return out
		}
		earliest = a.index
		rctx, cancel := context.WithTimeoutCause(ctx, a.typ.Timeout+10*time.Second, errors.New("rollback timed out"))
		err := a.typ.Action.Rollback(rctx, a.env, a.applied)
		cancel()
		if err != nil {
			out.failed = append(out.failed, fmt.Sprintf("%s on %s: %v", a.planned.Action, a.planned.Target, err))
			record(a.index, store.ActionRollbackFailed, map[string]any{"error": err.Error()})
			continue
		}
		out.undone = append(out.undone, a.applied.Plan.Summary)
		record(a.index, store.ActionRolledBack, map[string]any{"rolled_back": true})
	}
	var again []appliedAction
	for _, a := range done {
		if earliest >= 0 && a.index > earliest && a.planned.RerunAfterRollback && !a.applied.Plan.Reversible {
			again = append(again, a)
		}
	}
	if len(out.failed) > 0 && len(again) > 0 {
		out.failed = append(out.failed, "so nothing was run again after the rollback")
		return out
	}
	for _, a := range again {
		say(StageRollback, "running again so the rollback takes effect: %s", a.planned.Plan.Summary)
		if stopped("running again " + a.planned.Plan.Summary) {
			return out
		}
		record(a.index, store.ActionRerunning, nil)
		rctx, cancel := context.WithTimeoutCause(ctx, a.timeout, fmt.Errorf("rerun of %s on %s after rollback timed out after %s", a.planned.Action, a.planned.Target, a.timeout))
		ap, err := a.typ.Action.Apply(rctx, a.env, a.planned.Plan)
		cancel()
		if err != nil {
			out.failed = append(out.failed, fmt.Sprintf("running %s on %s again: %v", a.planned.Action, a.planned.Target, err))
			record(a.index, store.ActionRerunFailed, map[string]any{"error": err.Error()})
			// Later reruns (decode after prefill) depend on this one.
			break
		}
		out.rerun = append(out.rerun, a.planned.Plan.Summary)
		record(a.index, store.ActionRerun, map[string]any{"rerun": ap})
	}
	return out
}

func actionStepFor(rem *runbooks.Remediation, pa PlannedAction) *runbooks.ActionStep {
	// Actions are planned in order, one per target; walk the same order.
	idx := 0
	for _, as := range rem.Actions {
		n := len(as.Targets)
		if pa.Index < idx+n {
			return as
		}
		idx += n
	}
	return rem.Actions[len(rem.Actions)-1]
}

// unverified says why verification does not show the symptom gone, or
// "" when it does: every verify step ran, the diagnosis no longer holds,
// no critical finding that could be evaluated holds, and verify_when (if
// given) is true. It names the first of these that fails, with its
// evidence from shown (the verify report as it may be shown), so that
// whoever reads the outcome knows which finding to look at.
func (r *Remediator) unverified(rb *runbooks.Runbook, rem *runbooks.Remediation, ver, shown *runbooks.Report, p *engine.Prepared, diagnosis string) string {
	if len(shown.Steps) != len(ver.Steps) || len(shown.Diagnoses) != len(ver.Diagnoses) || len(shown.Findings) != len(ver.Findings) {
		// Shown is a copy of ver with secrets hidden; one that differs in
		// shape would name the wrong finding, so the reason is kept
		// general rather than wrong.
		shown = &runbooks.Report{Steps: make([]*runbooks.TargetRun, len(ver.Steps)), Diagnoses: make([]runbooks.DiagnosisResult, len(ver.Diagnoses)), Findings: make([]runbooks.FindingResult, len(ver.Findings))}
		for i := range shown.Steps {
			shown.Steps[i] = &runbooks.TargetRun{}
		}
	}
	for i, s := range ver.Steps {
		if !s.Status.Ran() {
			return fmt.Sprintf("verify step %s on %s did not run (%s: %s)", s.Step, s.Target, s.Status, shown.Steps[i].Error)
		}
	}
	for i, d := range ver.Diagnoses {
		if d.ID == diagnosis {
			why := fmt.Sprintf("diagnosis %s still holds: %s", d.ID, strings.TrimSuffix(shown.Diagnoses[i].Summary, "."))
			// The diagnosis's summary is prose; the finding it holds on
			// carries what the verify steps measured.
			for j, f := range ver.Findings {
				if slices.Contains(d.Findings, f.ID) {
					why += "; " + findingHolds(f.ID, shown.Findings[j])
					break
				}
			}
			return why
		}
	}
	for i, f := range ver.Findings {
		if f.Severity == runbooks.Critical {
			return "critical " + findingHolds(f.ID, shown.Findings[i])
		}
	}
	if rem.VerifyWhen != nil {
		ok, err := rb.EvalCondition(rem.VerifyWhen, ver, p.Params, r.now())
		switch {
		case err != nil:
			return fmt.Sprintf("verify_when %q could not be evaluated: %v", rem.VerifyWhen.Source, err)
		case !ok:
			return fmt.Sprintf("verify_when %q is false", rem.VerifyWhen.Source)
		}
	}
	return ""
}

// findingHolds says that a finding still holds, with its summary and its
// first evidence line, as the shown (redacted) report has them.
func findingHolds(id string, shown runbooks.FindingResult) string {
	if len(shown.Evidence) == 0 {
		return fmt.Sprintf("finding %s still holds: %s", id, shown.Summary)
	}
	return fmt.Sprintf("finding %s still holds: %s (%s)", id, strings.TrimSuffix(shown.Summary, "."), shown.Evidence[0])
}

// stillWarned names the warnings left after a verified fix: a partial fix
// (some space freed, not all) verifies with its "still tight" finding
// graded warning, and the outcome should not read as if nothing is left.
func stillWarned(ver, shown *runbooks.Report) string {
	var left []string
	for i, f := range ver.Findings {
		if f.Severity == runbooks.Warning && i < len(shown.Findings) {
			left = append(left, "warning "+findingHolds(f.ID, shown.Findings[i]))
		}
	}
	return strings.Join(left, "; ")
}

func hasDiagnosis(rep *runbooks.Report, id string) bool {
	for _, d := range rep.Diagnoses {
		if d.ID == id {
			return true
		}
	}
	return false
}

func allNoOp(b *PlanBody) bool {
	for _, a := range b.Actions {
		if !a.Plan.NoOp {
			return false
		}
	}
	return true
}

func anyReversible(b *PlanBody) bool {
	for _, a := range b.Actions {
		if a.Plan.Reversible && !a.Plan.NoOp {
			return true
		}
	}
	return false
}
