package remediation_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// A vote from the CLI is decided by the same policy as a click, and the
// audit log says after the store's own entry where it came from and what
// became of it; ApprovedFrom finds the source of the vote that approved a
// plan, and only of that one.
func TestVoteFromRecordsItsSource(t *testing.T) {
	t.Parallel()
	cli := remediation.Source{Channel: remediation.ChannelCLI, Login: "alice"}
	cases := []struct {
		name    string
		policy  store.Policy
		user    string
		approve bool
		// hash is the hash the voter saw; "" is the plan's.
		hash string
		// before are votes already cast, by users, from chat.
		before     []string
		wantState  store.PlanState
		outcome    string
		reason     string
		storeKind  string
		approvedBy bool
	}{
		{name: "settles", policy: store.Policy{Approvers: []string{"U0ALICE"}}, user: "U0ALICE", approve: true,
			wantState: store.PlanApproved, outcome: remediation.OutcomeApproved, storeKind: store.AuditApproval, approvedBy: true},
		{name: "one of two", policy: store.Policy{Approvers: []string{"@oncall"}, MinApprovals: 2}, user: "U0ALICE", approve: true,
			wantState: store.PlanProposed, outcome: remediation.OutcomeCounted, storeKind: store.AuditApproval},
		{name: "second of two after a click", policy: store.Policy{Approvers: []string{"@oncall"}, MinApprovals: 2}, user: "U0ALICE", approve: true,
			before: []string{"U0BOB"}, wantState: store.PlanApproved, outcome: remediation.OutcomeApproved, storeKind: store.AuditApproval, approvedBy: true},
		{name: "deny", policy: store.Policy{Approvers: []string{"U0ALICE"}}, user: "U0ALICE",
			wantState: store.PlanDenied, outcome: remediation.OutcomeDenied, storeKind: store.AuditApproval},
		{name: "not an approver", policy: store.Policy{Approvers: []string{"U0BOB"}}, user: "U0ALICE", approve: true,
			wantState: store.PlanProposed, outcome: remediation.OutcomeRefused, reason: remediation.ErrNotApprover.Error(), storeKind: store.AuditApprovalRefused},
		{name: "requester under the two-person rule", policy: store.Policy{Approvers: []string{"U0ALICE", "U0REQ"}, TwoPerson: true}, user: "U0REQ", approve: true,
			wantState: store.PlanProposed, outcome: remediation.OutcomeRefused, reason: string(store.RefusedSelf), storeKind: store.AuditApprovalRefused},
		{name: "another hash", policy: store.Policy{Approvers: []string{"U0ALICE"}}, user: "U0ALICE", approve: true, hash: "h-other",
			wantState: store.PlanProposed, outcome: remediation.OutcomeRefused, reason: string(store.RefusedStale), storeKind: store.AuditApprovalRefused},
		{name: "expired", policy: store.Policy{Approvers: []string{"U0ALICE"}, ExpiresAt: time.Now().Add(-time.Second)}, user: "U0ALICE", approve: true,
			wantState: store.PlanExpired, outcome: remediation.OutcomeRefused, reason: string(store.RefusedExpired), storeKind: store.AuditApprovalRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, st.Close()) })
			run, err := st.CreateRun(ctx, store.Run{Runbook: "fix", Trigger: store.TriggerAlert, RequestedBy: "U0REQ"})
			require.NoError(t, err)
			plan, _, err := st.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "fix", Diagnosis: "broken", Deployment: "here",
				Hash: "h1", Body: []byte(`{}`), RequestedBy: "U0REQ", Policy: tc.policy})
			require.NoError(t, err)
			rem := &remediation.Remediator{Store: st, Groups: remediation.Groups{"oncall": {"U0ALICE", "U0BOB"}}}
			for _, u := range tc.before {
				_, err := rem.Vote(ctx, plan.ID, u, true, plan.Hash)
				require.NoError(t, err)
			}
			hash := tc.hash
			if hash == "" {
				hash = plan.Hash
			}

			res, err := rem.VoteFrom(ctx, cli, plan.ID, tc.user, tc.approve, hash)
			if tc.outcome == remediation.OutcomeRefused {
				require.Error(t, err)
				require.NotErrorIs(t, err, remediation.ErrSourceNotAudited)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantState, res.Plan.State)
			got, err := st.GetPlan(ctx, plan.ID)
			require.NoError(t, err)
			require.Equal(t, tc.wantState, got.State)

			events, err := st.Audit(ctx, store.AuditFilter{PlanID: plan.ID})
			require.NoError(t, err)
			last := events[len(events)-1]
			require.Equal(t, remediation.AuditVoteSource, last.Kind)
			require.Equal(t, tc.user, last.Actor)
			var vs remediation.VoteSource
			require.NoError(t, json.Unmarshal(last.Detail, &vs))
			decision := store.Deny
			if tc.approve {
				decision = store.Approve
			}
			require.Equal(t, remediation.VoteSource{Source: cli, Decision: decision, PlanHash: hash, Outcome: tc.outcome, Reason: tc.reason}, vs)
			// The store's own entry of the vote comes first, as for a click.
			var own []store.AuditEvent
			for _, e := range events[:len(events)-1] {
				if e.Kind == tc.storeKind && e.Actor == tc.user {
					own = append(own, e)
				}
			}
			require.NotEmpty(t, own, "the store's %s entry by %s precedes the source", tc.storeKind, tc.user)

			src, ok, err := remediation.ApprovedFrom(ctx, st, plan.ID)
			require.NoError(t, err)
			require.Equal(t, tc.approvedBy, ok)
			if ok {
				require.Equal(t, cli, src)
			}
		})
	}
}

// A plan approved by clicks alone has no source: serve leaves it to the
// replica that took the click. A vote on a plan that does not exist
// decides nothing and writes nothing.
func TestApprovedFromClicksAndUnknownPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	run, err := st.CreateRun(ctx, store.Run{Runbook: "fix", Trigger: store.TriggerChat, RequestedBy: "U0REQ"})
	require.NoError(t, err)
	plan, _, err := st.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "fix", Deployment: "here",
		Hash: "h1", Body: []byte(`{}`), RequestedBy: "U0REQ", Policy: store.Policy{Approvers: []string{"U0ALICE"}}})
	require.NoError(t, err)
	rem := &remediation.Remediator{Store: st}
	res, err := rem.Vote(ctx, plan.ID, "U0ALICE", true, plan.Hash)
	require.NoError(t, err)
	require.Equal(t, store.PlanApproved, res.Plan.State)
	_, ok, err := remediation.ApprovedFrom(ctx, st, plan.ID)
	require.NoError(t, err)
	require.False(t, ok, "approved by a click")

	before, err := st.Audit(ctx, store.AuditFilter{})
	require.NoError(t, err)
	_, err = rem.VoteFrom(ctx, remediation.Source{Channel: remediation.ChannelCLI, Login: "alice"}, "p-nosuchplan", "U0ALICE", true, "h1")
	require.ErrorIs(t, err, store.ErrNotFound)
	after, err := st.Audit(ctx, store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, after, len(before), "an unknown plan is not audited")

	_, err = rem.VoteFrom(ctx, remediation.Source{}, plan.ID, "U0ALICE", true, "h1")
	require.ErrorContains(t, err, "the source needs a channel")
}

// failingSource is a store whose audit log refuses the entries saying where
// votes came from, and takes everything else.
type failingSource struct{ store.Store }

func (f failingSource) AppendAudit(ctx context.Context, e store.AuditEvent) (store.AuditEvent, error) {
	if e.Kind == remediation.AuditVoteSource {
		return store.AuditEvent{}, errors.New("disk full")
	}
	return f.Store.AppendAudit(ctx, e)
}

// A vote whose source cannot be written still stands: the error says so,
// and the plan, with no source, is left to serve's stranded-plan sweep.
func TestVoteFromStandsWithoutItsSource(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	run, err := st.CreateRun(ctx, store.Run{Runbook: "fix", Trigger: store.TriggerAlert, RequestedBy: "U0REQ"})
	require.NoError(t, err)
	plan, _, err := st.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "fix", Deployment: "here",
		Hash: "h1", Body: []byte(`{}`), RequestedBy: "U0REQ", Policy: store.Policy{Approvers: []string{"U0ALICE"}}})
	require.NoError(t, err)
	rem := &remediation.Remediator{Store: failingSource{st}}
	res, err := rem.VoteFrom(ctx, remediation.Source{Channel: remediation.ChannelCLI, Login: "alice"}, plan.ID, "U0ALICE", true, plan.Hash)
	require.ErrorIs(t, err, remediation.ErrSourceNotAudited)
	require.ErrorContains(t, err, "disk full")
	require.True(t, res.Settled)
	require.Equal(t, store.PlanApproved, res.Plan.State, "the vote stands")
	_, ok, err := remediation.ApprovedFrom(ctx, st, plan.ID)
	require.NoError(t, err)
	require.False(t, ok)
}
