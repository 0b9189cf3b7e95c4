package dispatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// replicaPair is two dispatchers, each with a store handle of its own on
// one PostgreSQL database: two `runbot serve` replicas in one test.
type replicaPair struct {
	a, b   *Dispatcher
	sa, sb *store.Postgres
	dir    string
}

func newReplicaPair(t *testing.T) replicaPair {
	t.Helper()
	dsn := storetest.PostgresDatabase(t)
	open := func(owner string) *store.Postgres {
		st, err := store.OpenPostgres(t.Context(), dsn, store.WithOwner(owner))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	p := replicaPair{sa: open("replica-a"), sb: open("replica-b"), dir: t.TempDir()}
	p.a, p.b = replicaDispatcher(t, p.sa), replicaDispatcher(t, p.sb)
	return p
}

// replicaDispatcher is a chatless dispatcher whose Remediator knows the
// approvers of stuck-worker's restart (@oncall).
func replicaDispatcher(t *testing.T, st store.Store) *Dispatcher {
	t.Helper()
	d := sweepDispatcher(t, st)
	d.current().rem.Groups = remediation.Groups{"oncall": {"U0AAA", "U0BBB"}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, errors.New("replica shutdown took too long"))
		defer cancel()
		require.NoError(t, d.Shutdown(ctx))
	})
	return d
}

// propose runs stuck-worker on d and returns the plan its diagnosis
// proposed.
func (p replicaPair) propose(t *testing.T, d *Dispatcher, st store.Store) store.Plan {
	t.Helper()
	_, err := d.Submit(t.Context(), Request{Runbook: "stuck-worker", Params: map[string]string{"host": "here", "dir": p.dir}, RequestedBy: requester, Source: store.TriggerChat})
	require.NoError(t, err)
	require.NoError(t, d.Idle(t.Context()))
	plans, err := st.ListPlans(t.Context(), store.PlanFilter{States: []store.PlanState{store.PlanProposed}})
	require.NoError(t, err)
	require.Len(t, plans, 1)
	return plans[0]
}

// restarts counts the restarts stuck-worker's remediation really made.
func (p replicaPair) restarts(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "applied.log"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "restarted\n")
}

// A plan proposed by replica A is approved by clicks that land on B and
// on A: the approvals add up in the database, the hash shown is checked
// whichever replica checks it, and when the second approver clicks on both
// replicas at once, the plan settles once and is applied once.
func TestApprovalLandsOnAnyReplica(t *testing.T) {
	t.Parallel()
	p := newReplicaPair(t)
	ctx := t.Context()
	plan := p.propose(t, p.a, p.sa)

	res, err := p.b.Vote(ctx, Vote{PlanID: plan.ID, Hash: "sha256:not-what-was-shown", User: "U0AAA", Approve: true})
	require.NoError(t, err)
	require.Contains(t, res.Refusal, "changed since it was shown", "B checks the hash A stored")
	res, err = p.b.Vote(ctx, Vote{PlanID: plan.ID, Hash: plan.Hash, User: "U0AAA", Approve: true})
	require.NoError(t, err)
	require.Empty(t, res.Refusal)
	require.Equal(t, 1, res.Approvals)
	require.Equal(t, 2, res.Needed)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied int
	)
	for _, d := range []*Dispatcher{p.a, p.b} {
		wg.Go(func() {
			res, err := d.Vote(ctx, Vote{PlanID: plan.ID, Hash: plan.Hash, User: "U0BBB", Approve: true})
			require.NoError(t, err)
			if res.Applied {
				mu.Lock()
				applied++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, applied, "one of the two clicks settles the plan")
	got, err := p.sb.GetPlan(ctx, plan.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanDone, got.State)
	approvals, err := p.sa.Approvals(ctx, plan.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 2)
	require.Equal(t, 1, p.restarts(t), "applied once")
}

// The deployment lock, the rate limit and the circuit breaker are read
// from the database: what replica A holds or did stops an apply on B.
func TestRemediationGuardrailsHoldAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// before does, through replica A's store, what stops B's apply.
		before func(t *testing.T, sa store.Store, plan store.Plan)
		want   string
	}{
		{
			name: "A holds the deployment lock",
			before: func(t *testing.T, sa store.Store, plan store.Plan) {
				t.Helper()
				_, err := sa.Acquire(t.Context(), "deployment/"+plan.Deployment, "replica-a plan other", 30*time.Minute)
				require.NoError(t, err)
			},
			want: "another remediation holds the deployment",
		},
		{
			name: "A's last remediation for the diagnosis failed",
			before: func(t *testing.T, sa store.Store, plan store.Plan) {
				t.Helper()
				failed := storetest.Move(t, sa, storetest.Approve(t, sa, storetest.ProposePlan(t, sa, func(q *store.Plan) {
					q.Remediation, q.Diagnosis, q.Deployment = "other-fix", plan.Diagnosis, plan.Deployment
				})), store.PlanApplying)
				_, err := sa.StartAction(t.Context(), store.ActionRecord{PlanID: failed.ID, Index: 0, Target: "host/here", Action: "command"})
				require.NoError(t, err)
				storetest.Move(t, sa, failed, store.PlanFailed)
			},
			want: "did not fix it",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newReplicaPair(t)
			ctx := t.Context()
			plan := p.propose(t, p.a, p.sa)
			tc.before(t, p.sa, plan)
			for _, u := range []string{"U0AAA", "U0BBB"} {
				_, err := p.b.Vote(ctx, Vote{PlanID: plan.ID, Hash: plan.Hash, User: u, Approve: true})
				require.NoError(t, err)
			}
			got, err := p.sa.GetPlan(ctx, plan.ID)
			require.NoError(t, err)
			require.Equal(t, store.PlanFailed, got.State)
			audit, err := p.sa.Audit(ctx, store.AuditFilter{PlanID: plan.ID, Kind: store.AuditPlanState})
			require.NoError(t, err)
			require.Contains(t, fmt.Sprint(auditDetails(audit)), tc.want)
			require.Zero(t, p.restarts(t), "B applied nothing")
		})
	}
}

func auditDetails(events []store.AuditEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Detail)
	}
	return out
}
