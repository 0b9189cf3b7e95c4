package store_test

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
	p := mkPlan(t, s)
	for _, to := range pathTo[state] {
		switch to {
		case store.PlanApproved:
			p = approve(t, s, p)
		case store.PlanDenied:
			res, err := s.RecordApproval(testCtx(t), store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Deny, PlanHash: p.Hash})
			require.NoError(t, err)
			p = res.Plan
		default:
			p = move(t, s, p, to)
		}
	}
	require.Equal(t, state, p.State)
	return p
}

func TestPlanTransitions(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	for _, from := range allPlanStates {
		for _, to := range allPlanStates {
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
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

func TestPlanFinalStates(t *testing.T) {
	for _, st := range allPlanStates {
		_, hasMoves := allowedMoves[st]
		require.Equal(t, !hasMoves, st.Final(), st)
	}
}

// A move whose From is not the plan's state is a conflict that names the
// actual state: the caller lost a race.
func TestTransitionConflictNamesCurrentState(t *testing.T) {
	s, _ := openTest(t)
	p := move(t, s, approve(t, s, mkPlan(t, s)), store.PlanApplying)
	_, err := s.TransitionPlan(testCtx(t), store.Transition{PlanID: p.ID, From: store.PlanApproved, To: store.PlanApplying})
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict)
	require.Equal(t, string(store.PlanApproved), conflict.Want)
	require.Equal(t, string(store.PlanApplying), conflict.Got)

	_, err = s.TransitionPlan(testCtx(t), store.Transition{PlanID: "p-missing", From: store.PlanApproved, To: store.PlanApplying})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Eight goroutines move the same approved plan to applying at once (a
// double click handled by several handlers): exactly one wins.
func TestApplyCASAcrossGoroutines(t *testing.T) {
	s, _ := openTest(t)
	for range 10 {
		p := approve(t, s, mkPlan(t, s))
		var (
			wg              sync.WaitGroup
			mu              sync.Mutex
			wins, conflicts int
		)
		for range 8 {
			wg.Go(func() {
				_, err := s.TransitionPlan(testCtx(t), store.Transition{PlanID: p.ID, From: store.PlanApproved, To: store.PlanApplying})
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
		wg.Wait()
		require.Equal(t, 1, wins)
		require.Equal(t, 7, conflicts)
	}
}

func TestPlanRecordsTimesAndOwner(t *testing.T) {
	s, c := openTest(t)
	p := approve(t, s, mkPlan(t, s))
	require.True(t, p.AppliedAt.IsZero())
	c.Advance(time.Minute)
	p = move(t, s, p, store.PlanApplying)
	require.Equal(t, c.Now(), p.AppliedAt)
	require.NotEmpty(t, p.Owner)
	require.True(t, p.FinishedAt.IsZero())
	p = move(t, s, p, store.PlanVerifying)
	c.Advance(time.Minute)
	p = move(t, s, p, store.PlanDone)
	require.Equal(t, c.Now(), p.FinishedAt)
	require.Equal(t, c.Now().Add(-time.Minute), p.AppliedAt, "applied_at keeps the start of applying")

	got, err := s.GetPlan(testCtx(t), p.ID)
	require.NoError(t, err)
	require.Equal(t, p, got)
}

// A new proposal of the same remediation on the same deployment supersedes
// the older proposal; approved plans and other deployments are untouched.
func TestCreatePlanSupersedesOlderProposal(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	old := mkPlan(t, s)
	other := mkPlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })
	run := mkRun(t, s)
	proposal := store.Plan{RunID: run.ID, Remediation: old.Remediation, Deployment: "dsv4",
		Hash: "sha256:bbbb", Body: json.RawMessage(`{}`), RequestedBy: "U-carol"}

	newer, superseded, err := s.CreatePlan(ctx, proposal)
	require.NoError(t, err)
	require.Equal(t, store.PlanProposed, newer.State)
	require.Equal(t, []string{old.ID}, planIDs(superseded))
	require.Equal(t, store.PlanSuperseded, superseded[0].State)
	require.Equal(t, []string{"plan.created", "plan.state:superseded"}, auditKinds(t, s, store.AuditFilter{PlanID: old.ID}))

	newer = approve(t, s, newer)
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

func TestCreatePlanValidates(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	run := mkRun(t, s)
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
}

// Pending approvals are the proposed, unexpired plans, and they survive a
// restart of the process.
func TestPendingPlansSurviveReopenAndExpire(t *testing.T) {
	path := dbPath(t)
	c := newClock()
	s := openAt(t, path, store.WithNow(c.Now))
	soon := mkPlan(t, s, func(p *store.Plan) {
		p.Policy.ExpiresAt = c.Now().Add(15 * time.Minute)
	})
	never := mkPlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })
	approve(t, s, mkPlan(t, s, func(p *store.Plan) { p.Deployment = "dsv6" }))
	require.NoError(t, s.Close())

	s = openAt(t, path, store.WithNow(c.Now))
	pending, err := s.PendingPlans(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{soon.ID, never.ID}, planIDs(pending))
	require.Equal(t, soon.Policy.ExpiresAt, pending[0].Policy.ExpiresAt)

	c.Advance(15 * time.Minute)
	pending, err = s.PendingPlans(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{never.ID}, planIDs(pending), "an expired plan is no longer pending")

	expired, err := s.ExpirePlans(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, []string{soon.ID}, planIDs(expired))
	require.Equal(t, store.PlanExpired, expired[0].State)
	expired, err = s.ExpirePlans(testCtx(t))
	require.NoError(t, err)
	require.Empty(t, expired)
}

func TestListPlansFilters(t *testing.T) {
	s, _ := openTest(t)
	a := approve(t, s, mkPlan(t, s))
	b := mkPlan(t, s, func(p *store.Plan) { p.Deployment = "dsv5" })
	got, err := s.ListPlans(testCtx(t), store.PlanFilter{States: []store.PlanState{store.PlanApproved, store.PlanApplying}})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, planIDs(got))
	got, err = s.ListPlans(testCtx(t), store.PlanFilter{Deployment: "dsv5"})
	require.NoError(t, err)
	require.Equal(t, []string{b.ID}, planIDs(got))
	got, err = s.ListPlans(testCtx(t), store.PlanFilter{RunID: a.RunID})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, planIDs(got))
}

func planIDs(ps []store.Plan) []string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return ids
}
