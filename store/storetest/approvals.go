package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var approvalTests = []test{
	{"OneApprovesASecondClickIsRefused", testOneApprovalApprovesAndASecondClickIsRefused},
	{"TwoPersonRule", testTwoPersonRule},
	{"MinApprovals", testMinApprovals},
	{"OtherHashIsRefused", testApprovalOfAnotherHashIsRefused},
	{"DenyDeniesAtOnce", testDenyDeniesAtOnce},
	{"LateApprovalExpiresThePlan", testLateApprovalExpiresThePlan},
	{"ConcurrentApprovalsSettleOnce", testConcurrentApprovalsSettleOnce},
	{"CountAcrossStores", testApprovalsCountAcrossStores},
}

func decide(t *testing.T, s store.Store, p store.Plan, user string, d store.Decision, hash string) (store.ApprovalResult, error) {
	t.Helper()
	return s.RecordApproval(t.Context(), store.Approval{PlanID: p.ID, User: user, Decision: d, PlanHash: hash})
}

func requireRefused(t *testing.T, err error, reason store.ApprovalRefusal, state store.PlanState) {
	t.Helper()
	var refused *store.ApprovalError
	require.ErrorAs(t, err, &refused)
	require.Equal(t, reason, refused.Reason)
	require.Equal(t, state, refused.State)
}

func testOneApprovalApprovesAndASecondClickIsRefused(t *testing.T, e *Env) {
	s := e.S
	p := ProposePlan(t, s)
	res, err := decide(t, s, p, "U-bob", store.Approve, p.Hash)
	require.NoError(t, err)
	require.True(t, res.Settled)
	require.Equal(t, store.PlanApproved, res.Plan.State)
	require.Equal(t, 1, res.Approvals)
	require.Equal(t, 1, res.Needed)

	_, err = decide(t, s, p, "U-bob", store.Approve, p.Hash)
	requireRefused(t, err, store.RefusedClosed, store.PlanApproved)

	approvals, err := s.Approvals(t.Context(), p.ID)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: p.Hash, At: Epoch}, approvals[0])
	require.Equal(t, []string{"plan.created", "plan.approval", "plan.state:approved", "plan.approval_refused"},
		AuditKinds(t, s, store.AuditFilter{PlanID: p.ID}))
}

func testTwoPersonRule(t *testing.T, e *Env) {
	s := e.S
	p := ProposePlan(t, s, func(p *store.Plan) { p.Policy.TwoPerson = true })

	_, err := decide(t, s, p, p.RequestedBy, store.Approve, p.Hash)
	requireRefused(t, err, store.RefusedSelf, store.PlanProposed)

	res, err := decide(t, s, p, "U-bob", store.Approve, p.Hash)
	require.NoError(t, err)
	require.True(t, res.Settled, "under the two-person rule one approver who is not the requester suffices")
	require.Equal(t, store.PlanApproved, res.Plan.State)
	require.Equal(t, 1, res.Needed)
}

func testMinApprovals(t *testing.T, e *Env) {
	s := e.S
	p := ProposePlan(t, s, func(p *store.Plan) { p.Policy.MinApprovals = 2 })

	res, err := decide(t, s, p, "U-bob", store.Approve, p.Hash)
	require.NoError(t, err)
	require.False(t, res.Settled)
	require.Equal(t, store.PlanProposed, res.Plan.State)
	require.Equal(t, 1, res.Approvals)
	require.Equal(t, 2, res.Needed)

	res, err = decide(t, s, p, "U-bob", store.Approve, p.Hash)
	require.NoError(t, err, "a double click of the same approver is not an error while the plan waits")
	require.False(t, res.Settled)
	require.Equal(t, 1, res.Approvals, "the same person twice is one approval")

	res, err = decide(t, s, p, "U-carol", store.Approve, p.Hash)
	require.NoError(t, err)
	require.True(t, res.Settled)
	require.Equal(t, store.PlanApproved, res.Plan.State)
	require.Equal(t, 2, res.Approvals)
}

func testApprovalOfAnotherHashIsRefused(t *testing.T, e *Env) {
	s := e.S
	p := ProposePlan(t, s)
	_, err := decide(t, s, p, "U-bob", store.Approve, "sha256:what-bob-saw-earlier")
	requireRefused(t, err, store.RefusedStale, store.PlanProposed)
	got, err := s.GetPlan(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanProposed, got.State)
	approvals, err := s.Approvals(t.Context(), p.ID)
	require.NoError(t, err)
	require.Empty(t, approvals)
}

func testDenyDeniesAtOnce(t *testing.T, e *Env) {
	s := e.S
	p := ProposePlan(t, s, func(p *store.Plan) { p.Policy.MinApprovals = 3 })
	_, err := decide(t, s, p, "U-bob", store.Approve, p.Hash)
	require.NoError(t, err)
	res, err := decide(t, s, p, "U-carol", store.Deny, p.Hash)
	require.NoError(t, err)
	require.True(t, res.Settled)
	require.Equal(t, store.PlanDenied, res.Plan.State)
	_, err = decide(t, s, p, "U-dave", store.Approve, p.Hash)
	requireRefused(t, err, store.RefusedClosed, store.PlanDenied)
}

// An approval after the window closed expires the plan, even when no sweeper
// ran ExpirePlans first.
func testLateApprovalExpiresThePlan(t *testing.T, e *Env) {
	s, c := e.S, e.Clock
	p := ProposePlan(t, s, func(p *store.Plan) { p.Policy.ExpiresAt = Epoch.Add(15 * time.Minute) })
	c.Advance(15 * time.Minute)
	_, err := decide(t, s, p, "U-bob", store.Approve, p.Hash)
	requireRefused(t, err, store.RefusedExpired, store.PlanExpired)
	got, err := s.GetPlan(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanExpired, got.State, "the expiry is committed although the approval was refused")
}

// Two approvers of a plan needing two approvals click at the same moment: the plan is
// approved, and exactly one of the two calls reports that it settled it.
func testConcurrentApprovalsSettleOnce(t *testing.T, e *Env) {
	s := e.S
	for range 10 {
		p := ProposePlan(t, s, func(p *store.Plan) { p.Policy.MinApprovals = 2 })
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			settled int
		)
		for _, user := range []string{"U-bob", "U-carol"} {
			wg.Go(func() {
				res, err := s.RecordApproval(t.Context(), store.Approval{PlanID: p.ID, User: user, Decision: store.Approve, PlanHash: p.Hash})
				if err != nil {
					t.Errorf("approval by %s: %v", user, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if res.Settled {
					settled++
				}
			})
		}
		wg.Wait()
		require.Equal(t, 1, settled)
		got, err := s.GetPlan(t.Context(), p.ID)
		require.NoError(t, err)
		require.Equal(t, store.PlanApproved, got.State)
	}
}

// An approval counts whichever process receives the click: two approvals
// through two stores on one database settle a plan that needs two, and a
// stale click on the second is refused there too.
func testApprovalsCountAcrossStores(t *testing.T, e *Env) {
	other := e.OpenAs(t, "storetest/replica")
	p := ProposePlan(t, e.S, func(p *store.Plan) { p.Policy.MinApprovals = 2 })
	res, err := decide(t, e.S, p, "U-bob", store.Approve, p.Hash)
	require.NoError(t, err)
	require.False(t, res.Settled)
	_, err = decide(t, other, p, "U-carol", store.Approve, "sha256:an-older-plan")
	requireRefused(t, err, store.RefusedStale, store.PlanProposed)
	res, err = decide(t, other, p, "U-carol", store.Approve, p.Hash)
	require.NoError(t, err)
	require.True(t, res.Settled)
	require.Equal(t, 2, res.Approvals)
	got, err := e.S.GetPlan(t.Context(), p.ID)
	require.NoError(t, err)
	require.Equal(t, store.PlanApproved, got.State)
}
