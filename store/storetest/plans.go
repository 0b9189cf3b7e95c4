package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var planTests = []test{
	{"Transitions", testPlanTransitions},
	{"FinalStates", testPlanFinalStates},
	{"ConflictNamesCurrentState", testTransitionConflictNamesCurrentState},
	{"ApplyOnceAcrossGoroutines", testApplyCASAcrossGoroutines},
	{"ApplyOnceAcrossStores", testApplyCASAcrossStores},
	{"RecordsTimesAndOwner", testPlanRecordsTimesAndOwner},
	{"SupersedesOlderProposal", testCreatePlanSupersedesOlderProposal},
	{"CreateValidates", testCreatePlanValidates},
	{"PendingSurviveReopenAndExpire", testPendingPlansSurviveReopenAndExpire},
	{"ListFilters", testListPlansFilters},
}

var allPlanStates = []store.PlanState{
	store.PlanProposed, store.PlanApproved, store.PlanApplying, store.PlanVerifying, store.PlanDone,
	store.PlanRolledBack, store.PlanFailed, store.PlanNotNeeded, store.PlanDenied, store.PlanExpired,
	store.PlanSuperseded, store.PlanInterrupted,
}

// allowedMoves is the state machine as the engine relies on it, written out
// here rather than read from the package so that a change to it shows up.
var allowedMoves = map[store.PlanState][]store.PlanState{
	store.PlanProposed:  {store.PlanApproved, store.PlanDenied, store.PlanExpired, store.PlanSuperseded},
	store.PlanApproved:  {store.PlanApplying, store.PlanNotNeeded, store.PlanSuperseded, store.PlanFailed, store.PlanExpired},
	store.PlanApplying:  {store.PlanVerifying, store.PlanRolledBack, store.PlanFailed, store.PlanNotNeeded, store.PlanInterrupted},
	store.PlanVerifying: {store.PlanDone, store.PlanRolledBack, store.PlanFailed, store.PlanInterrupted},
}

// pathTo is how a plan reaches each state from proposed.
var pathTo = map[store.PlanState][]store.PlanState{
	store.PlanProposed:    {},
	store.PlanApproved:    {store.PlanApproved},
	store.PlanApplying:    {store.PlanApproved, store.PlanApplying},
	store.PlanVerifying:   {store.PlanApproved, store.PlanApplying, store.PlanVerifying},
	store.PlanDone:        {store.PlanApproved, store.PlanApplying, store.PlanVerifying, store.PlanDone},
	store.PlanRolledBack:  {store.PlanApproved, store.PlanApplying, store.PlanVerifying, store.PlanRolledBack},
	store.PlanFailed:      {store.PlanApproved, store.PlanApplying, store.PlanFailed},
	store.PlanNotNeeded:   {store.PlanApproved, store.PlanNotNeeded},
	store.PlanDenied:      {store.PlanDenied},
	store.PlanExpired:     {store.PlanExpired},
	store.PlanSuperseded:  {store.PlanSuperseded},
	store.PlanInterrupted: {store.PlanApproved, store.PlanApplying, store.PlanInterrupted},
}

// planIn makes a plan and walks it to state the way the engine and the bot
// would: approvals through RecordApproval, everything else by transitions.
func planIn(t *testing.T, s store.Store, state store.PlanState) store.Plan {
	t.Helper()
	p := ProposePlan(t, s)
	for _, to := range pathTo[state] {
		switch to {
		case store.PlanApproved:
			p = Approve(t, s, p)
		case store.PlanDenied:
			res, err := s.RecordApproval(t.Context(), store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Deny, PlanHash: p.Hash})
			require.NoError(t, err)
			p = res.Plan
		default:
			p = Move(t, s, p, to)
		}
	}
	require.Equal(t, state, p.State)
	return p
}

func testPlanTransitions(t *testing.T, e *Env) {
	s := e.S
	for _, from := range allPlanStates {
		for _, to := range allPlanStates {
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				ctx := t.Context()
				p := planIn(t, s, from)
				moved, err := s.TransitionPlan(ctx, store.Transition{PlanID: p.ID, From: from, To: to, Actor: "engine"})
				allowed := false
				for _, a := range allowedMoves[from] {
					allowed = allowed || a == to
				}
				require.Equal(t, allowed, store.CanTransition(from, to))
				var invalid *store.InvalidTransitionError
				switch {
				case to == store.PlanApproved || to == store.PlanDenied:
					require.ErrorIs(t, err, store.ErrNeedsApproval)
				case allowed:
					require.NoError(t, err)
					require.Equal(t, to, moved.State)
				default:
					require.ErrorAs(t, err, &invalid)
					require.Equal(t, string(from), invalid.From)
					require.Equal(t, string(to), invalid.To)
				}
				got, err := s.GetPlan(ctx, p.ID)
				require.NoError(t, err)
				if allowed && to != store.PlanApproved && to != store.PlanDenied {
					require.Equal(t, to, got.State)
				} else {
					require.Equal(t, from, got.State, "a refused move changes nothing")
				}
			})
		}
	}
}

func testPlanFinalStates(t *testing.T, _ *Env) {
	for _, st := range allPlanStates {
		_, hasMoves := allowedMoves[st]
		require.Equal(t, !hasMoves, st.Final(), st)
	}
}

// A move whose From is not the plan's state is a conflict that names the
// actual state: the caller lost a race.
func testTransitionConflictNamesCurrentState(t *testing.T, e *Env) {
	s := e.S
	p := Move(t, s, Approve(t, s, ProposePlan(t, s)), store.PlanApplying)
	_, err := s.TransitionPlan(t.Context(), store.Transition{PlanID: p.ID, From: store.PlanApproved, To: store.PlanApplying})
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, conflict.Want, string(store.PlanApproved))
	require.Equal(t, string(store.PlanApplying), conflict.Got)

	_, err = s.TransitionPlan(t.Context(), store.Transition{PlanID: "p-missing", From: store.PlanApproved, To: store.PlanApplying})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// raceToApply has every store in stores move the approved plan p to
// applying from perStore goroutines at once and returns how many won and
// how many were told that someone else had.
func raceToApply(t *testing.T, stores []store.Store, perStore int, p store.Plan) (wins, conflicts int) {
	t.Helper()
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for _, s := range stores {
		for range perStore {
			wg.Go(func() {
				_, err := s.TransitionPlan(t.Context(), store.Transition{PlanID: p.ID, From: store.PlanApproved, To: store.PlanApplying})
				mu.Lock()
				defer mu.Unlock()
				var conflict *store.StateConflictError
				switch {
				case err == nil:
					wins++
				case errors.As(err, &conflict):
					conflicts++
				default:
					t.Errorf("unexpected error: %v", err)
				}
			})
		}
	}
	wg.Wait()
	return wins, conflicts
}

// Eight goroutines move the same approved plan to applying at once (a
// double click handled by several handlers): exactly one wins.
func testApplyCASAcrossGoroutines(t *testing.T, e *Env) {
	s := e.S
	for range 10 {
		p := Approve(t, s, ProposePlan(t, s))
		wins, conflicts := raceToApply(t, []store.Store{s}, 8, p)
		require.Equal(t, 1, wins)
		require.Equal(t, 7, conflicts)
	}
}

// Two processes on the same database (two replicas receiving the same
// click) race to apply the same plans: each plan is applied by exactly one,
// and the audit log shows exactly one applying move per plan.
func testApplyCASAcrossStores(t *testing.T, e *Env) {
	other := e.OpenAs(t, "storetest/replica")
	for range 10 {
		p := Approve(t, e.S, ProposePlan(t, e.S))
		wins, conflicts := raceToApply(t, []store.Store{e.S, other}, 4, p)
		require.Equal(t, 1, wins)
		require.Equal(t, 7, conflicts)
		moves := 0
		for _, k := range AuditKinds(t, other, store.AuditFilter{PlanID: p.ID}) {
			if k == store.AuditPlanState+":applying" {
				moves++
			}
		}
		require.Equal(t, 1, moves, "plan %s", p.ID)
	}
}

func testPlanRecordsTimesAndOwner(t *testing.T, e *Env) {
	s, c := e.S, e.Clock
	p := Approve(t, s, ProposePlan(t, s))
	require.True(t, p.AppliedAt.IsZero())
	require.Empty(t, p.Owner, "nobody owns a plan before it is applied")
	c.Advance(time.Minute)
	p = Move(t, s, p, store.PlanApplying)
	require.Equal(t, c.Now(), p.AppliedAt)
	require.Equal(t, MainOwner, p.Owner, "the applying process owns the plan")
	require.True(t, p.FinishedAt.IsZero())
	p = Move(t, s, p, store.PlanVerifying)
	c.Advance(time.Minute)
	p = Move(t, s, p, store.PlanDone)
	require.Equal(t, c.Now(), p.FinishedAt)
	require.Equal(t, c.Now().Add(-time.Minute), p.AppliedAt, "applied_at keeps the start of applying")

	got, err := s.GetPlan(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, p, got)
}

// A new proposal of the same remediation on the same deployment supersedes
// the older proposal; approved plans and other deployments are untouched.
func testCreatePlanSupersedesOlderProposal(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	old := ProposePlan(t, s)
	other := ProposePlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })
	run := CreateRun(t, s)
	proposal := store.Plan{RunID: run.ID, Remediation: old.Remediation, Deployment: "dsv4",
		Hash: "sha256:bbbb", Body: json.RawMessage(`{}`), RequestedBy: "U-carol"}

	newer, superseded, err := s.CreatePlan(ctx, proposal)
	require.NoError(t, err)
	require.Equal(t, store.PlanProposed, newer.State)
	require.Equal(t, []string{old.ID}, PlanIDs(superseded))
	require.Equal(t, store.PlanSuperseded, superseded[0].State)
	require.Equal(t, []string{"plan.created", "plan.state:superseded"}, AuditKinds(t, s, store.AuditFilter{PlanID: old.ID}))

	newer = Approve(t, s, newer)
	proposal.Hash = "sha256:cccc"
	_, superseded, err = s.CreatePlan(ctx, proposal)
	require.NoError(t, err)
	require.Empty(t, superseded)
	for id, want := range map[string]store.PlanState{newer.ID: store.PlanApproved, other.ID: store.PlanProposed} {
		got, err := s.GetPlan(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, got.State, id)
	}
}

func testCreatePlanValidates(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	run := CreateRun(t, s)
	good := store.Plan{RunID: run.ID, Remediation: "x", Deployment: "dsv4", Hash: "h", Body: json.RawMessage(`{}`)}
	for name, edit := range map[string]func(*store.Plan){
		"no hash":      func(p *store.Plan) { p.Hash = "" },
		"bad body":     func(p *store.Plan) { p.Body = json.RawMessage(`{`) },
		"unknown run":  func(p *store.Plan) { p.RunID = "r-nope" },
		"bad id chars": func(p *store.Plan) { p.ID = "p 1" },
	} {
		p := good
		edit(&p)
		_, _, err := s.CreatePlan(ctx, p)
		require.Error(t, err, name)
	}
	_, _, err := s.CreatePlan(ctx, good)
	require.NoError(t, err, "the good plan is good")
}

// Pending approvals are the proposed, unexpired plans, and they survive a
// restart of the process.
func testPendingPlansSurviveReopenAndExpire(t *testing.T, e *Env) {
	s, c := e.S, e.Clock
	soon := ProposePlan(t, s, func(p *store.Plan) {
		p.Policy.ExpiresAt = c.Now().Add(15 * time.Minute)
	})
	never := ProposePlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })
	Approve(t, s, ProposePlan(t, s, func(p *store.Plan) { p.Deployment = "dsv6" }))

	s = e.Reopen(t)
	pending, err := s.PendingPlans(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{soon.ID, never.ID}, PlanIDs(pending))
	require.Equal(t, soon.Policy.ExpiresAt, pending[0].Policy.ExpiresAt)

	c.Advance(15 * time.Minute)
	pending, err = s.PendingPlans(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{never.ID}, PlanIDs(pending), "an expired plan is no longer pending")

	expired, err := s.ExpirePlans(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{soon.ID}, PlanIDs(expired))
	require.Equal(t, store.PlanExpired, expired[0].State)
	expired, err = s.ExpirePlans(t.Context())
	require.NoError(t, err)
	require.Empty(t, expired)
}

func testListPlansFilters(t *testing.T, e *Env) {
	s := e.S
	a := Approve(t, s, ProposePlan(t, s))
	b := ProposePlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })
	got, err := s.ListPlans(t.Context(), store.PlanFilter{States: []store.PlanState{store.PlanApproved, store.PlanApplying}})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, PlanIDs(got))
	got, err = s.ListPlans(t.Context(), store.PlanFilter{Deployment: "dsv5"})
	require.NoError(t, err)
	require.Equal(t, []string{b.ID}, PlanIDs(got))
	got, err = s.ListPlans(t.Context(), store.PlanFilter{RunID: a.RunID})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, PlanIDs(got))
	got, err = s.ListPlans(t.Context(), store.PlanFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{b.ID, a.ID}, PlanIDs(got), "newest first")
	got, err = s.ListPlans(t.Context(), store.PlanFilter{Remediation: a.Remediation, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []string{b.ID}, PlanIDs(got))
}
