package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var actionTests = []test{
	{"FollowTheApply", testActionRecordsFollowTheApply},
	{"Transitions", testActionTransitions},
}

func testActionRecordsFollowTheApply(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	p := ProposePlan(t, s)

	_, err := s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "config_edit"})
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict, "no action starts before the plan is applying")
	require.Equal(t, string(store.PlanProposed), conflict.Got)

	p = Move(t, s, Approve(t, s, p), store.PlanApplying)
	edit, err := s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "config_edit",
		Detail: json.RawMessage(`{"diff":"+--disable-overlap-schedule"}`)})
	require.NoError(t, err)
	require.Equal(t, store.ActionStarted, edit.State)
	_, err = s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "config_edit"})
	require.Error(t, err, "an action index starts once")

	c.Advance(time.Second)
	edit, err = s.SetActionState(ctx, p.ID, 0, store.ActionDone, json.RawMessage(`{"changed":true}`))
	require.NoError(t, err)
	require.Equal(t, store.ActionDone, edit.State)
	require.JSONEq(t, `{"changed":true}`, string(edit.Detail))
	require.Equal(t, c.Now(), edit.FinishedAt)

	_, err = s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 1, Target: "decode@gpu-1", Action: "systemd_restart"})
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 1, store.ActionFailed, json.RawMessage(`{"error":"unit failed to start"}`))
	require.NoError(t, err)

	// The failed restart makes the engine roll the config edit back.
	_, err = s.SetActionState(ctx, p.ID, 0, store.ActionRolledBack, nil)
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 1, store.ActionRollbackFailed, nil)
	require.NoError(t, err)

	actions, err := s.Actions(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, actions, 2)
	require.Equal(t, store.ActionRolledBack, actions[0].State)
	require.JSONEq(t, `{"changed":true}`, string(actions[0].Detail), "a nil detail keeps the recorded one")
	require.Equal(t, store.ActionRollbackFailed, actions[1].State)

	require.Equal(t, []string{"plan.created", "plan.approval", "plan.state:approved", "plan.state:applying",
		"action.state", "action.state", "action.state", "action.state", "action.state", "action.state"},
		AuditKinds(t, s, store.AuditFilter{PlanID: p.ID}))
}

func testActionTransitions(t *testing.T, e *Env) {
	all := []store.ActionState{store.ActionStarted, store.ActionDone, store.ActionFailed, store.ActionRolledBack,
		store.ActionRollbackFailed, store.ActionRerunning, store.ActionRerun, store.ActionRerunFailed}
	allowed := map[store.ActionState][]store.ActionState{
		store.ActionStarted:   {store.ActionDone, store.ActionFailed},
		store.ActionDone:      {store.ActionRolledBack, store.ActionRollbackFailed, store.ActionRerunning},
		store.ActionFailed:    {store.ActionRolledBack, store.ActionRollbackFailed, store.ActionRerunning},
		store.ActionRerunning: {store.ActionRerun, store.ActionRerunFailed},
	}
	// How each state is reached from started.
	path := map[store.ActionState][]store.ActionState{
		store.ActionStarted:        {},
		store.ActionDone:           {store.ActionDone},
		store.ActionFailed:         {store.ActionFailed},
		store.ActionRolledBack:     {store.ActionDone, store.ActionRolledBack},
		store.ActionRollbackFailed: {store.ActionDone, store.ActionRollbackFailed},
		store.ActionRerunning:      {store.ActionDone, store.ActionRerunning},
		store.ActionRerun:          {store.ActionDone, store.ActionRerunning, store.ActionRerun},
		store.ActionRerunFailed:    {store.ActionFailed, store.ActionRerunning, store.ActionRerunFailed},
	}
	s, ctx := e.S, t.Context()
	for _, from := range all {
		for _, to := range all {
			p := Move(t, s, Approve(t, s, ProposePlan(t, s)), store.PlanApplying)
			_, err := s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"})
			require.NoError(t, err)
			for _, st := range path[from] {
				_, err := s.SetActionState(ctx, p.ID, 0, st, nil)
				require.NoError(t, err)
			}
			ok := false
			for _, a := range allowed[from] {
				ok = ok || a == to
			}
			got, err := s.SetActionState(ctx, p.ID, 0, to, nil)
			if ok {
				require.NoError(t, err, "%s -> %s", from, to)
				require.Equal(t, to, got.State)
			} else {
				var invalid *store.InvalidTransitionError
				require.ErrorAs(t, err, &invalid, "%s -> %s", from, to)
			}
		}
	}
	_, err := s.SetActionState(ctx, "p-missing", 0, store.ActionDone, nil)
	require.ErrorIs(t, err, store.ErrNotFound)
}

var rateLimitTests = []test{
	{"Queries", testRateLimitQueries},
	{"CountedAcrossStores", testRateLimitsCountedAcrossStores},
}

// The rate limit query: how often a remediation ran recently. (The circuit
// breaker reads the plans and their actions: remediation.Remediator.)
func testRateLimitQueries(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	start := c.Now()

	apply := func(deployment, target string, end store.PlanState) {
		p := ProposePlan(t, s, func(p *store.Plan) { p.Deployment = deployment })
		p = Move(t, s, Approve(t, s, p), store.PlanApplying)
		_, err := s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: target, Action: "systemd_restart"})
		require.NoError(t, err)
		if end == store.PlanDone || end == store.PlanRolledBack {
			p = Move(t, s, p, store.PlanVerifying)
		}
		Move(t, s, p, end)
	}
	apply("dsv4", "decode@gpu-1", store.PlanDone)
	c.Advance(30 * time.Minute)
	apply("dsv4", "prefill@gpu-0", store.PlanFailed)
	c.Advance(20 * time.Minute)
	apply("dsv4", "decode@gpu-1", store.PlanRolledBack)
	apply("dsv5", "decode@gpu-9", store.PlanDone)
	ProposePlan(t, s) // proposed, never applied: not counted
	c.Advance(20 * time.Minute)

	hourAgo := c.Now().Add(-time.Hour)
	for name, tc := range map[string]struct {
		f    store.AppliedFilter
		want int
	}{
		"last hour on dsv4":          {store.AppliedFilter{Deployment: "dsv4", Since: hourAgo}, 2},
		"ever on dsv4":               {store.AppliedFilter{Deployment: "dsv4", Since: start}, 3},
		"decode on dsv4, last hour":  {store.AppliedFilter{Deployment: "dsv4", Since: hourAgo, Target: "decode@gpu-1"}, 1},
		"restarts on dsv4, ever":     {store.AppliedFilter{Deployment: "dsv4", Since: start, Action: "systemd_restart"}, 3},
		"config edits on dsv4, ever": {store.AppliedFilter{Deployment: "dsv4", Since: start, Action: "config_edit"}, 0},
		"by diagnosis":               {store.AppliedFilter{Deployment: "dsv5", Since: start, Diagnosis: "pd_transfer_wedge"}, 1},
		"other remediation":          {store.AppliedFilter{Deployment: "dsv4", Since: start, Remediation: "other"}, 0},
	} {
		n, err := s.CountApplied(ctx, tc.f)
		require.NoError(t, err, name)
		require.Equal(t, tc.want, n, name)
	}
	_, err := s.CountApplied(ctx, store.AppliedFilter{Deployment: "dsv4"})
	require.Error(t, err, "since is required")
}

// What one process applied counts in the limits another process checks:
// replicas share one rate limit and one circuit breaker.
func testRateLimitsCountedAcrossStores(t *testing.T, e *Env) {
	other := e.OpenAs(t, "storetest/replica")
	since := e.Clock.Now()
	p := Move(t, other, Approve(t, other, ProposePlan(t, other)), store.PlanApplying)
	_, err := other.StartAction(t.Context(), store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"})
	require.NoError(t, err)
	p = Move(t, other, Move(t, other, p, store.PlanVerifying), store.PlanRolledBack)

	n, err := e.S.CountApplied(t.Context(), store.AppliedFilter{Deployment: "dsv4", Since: since, Action: "systemd_restart"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	// The circuit breaker reads the plans, newest first.
	plans, err := e.S.ListPlans(t.Context(), store.PlanFilter{Deployment: "dsv4"})
	require.NoError(t, err)
	require.NotEmpty(t, plans)
	require.Equal(t, p.ID, plans[0].ID)
	require.Equal(t, store.PlanRolledBack, plans[0].State)
}
