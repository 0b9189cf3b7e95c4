package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

func TestMain(m *testing.M) {
	// The cross-process tests re-execute this binary as a child that opens
	// the same database file; see child_test.go.
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// clock is a settable clock for WithNow.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 8, 30, 12, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func dbPath(t testing.TB) string { return filepath.Join(t.TempDir(), "runbot.db") }

// openAt opens the store at path and closes it when the test ends.
func openAt(t testing.TB, path string, opts ...store.Option) *store.SQLite {
	t.Helper()
	s, err := store.Open(testCtx(t), path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() }) // test cleanup
	return s
}

// openTest opens a fresh store on a fake clock.
func openTest(t testing.TB) (*store.SQLite, *clock) {
	t.Helper()
	c := newClock()
	return openAt(t, dbPath(t), store.WithNow(c.Now)), c
}

func mkRun(t testing.TB, s store.Store) store.Run {
	t.Helper()
	r, err := s.CreateRun(testCtx(t), store.Run{
		Runbook: "sglang-pd-wedge", Trigger: store.TriggerSlack, RequestedBy: "U-alice",
		Params: map[string]string{"deployment": "dsv4"},
	})
	require.NoError(t, err)
	return r
}

// mkPlan creates a proposed plan for a new run; edit adjusts it first.
func mkPlan(t testing.TB, s store.Store, edit ...func(*store.Plan)) store.Plan {
	t.Helper()
	run := mkRun(t, s)
	p := store.Plan{
		RunID: run.ID, Remediation: "disable_overlap_and_restart", Diagnosis: "pd_transfer_wedge",
		Deployment: "dsv4", Hash: "sha256:aaaa", RequestedBy: "U-alice",
		Body:   json.RawMessage(`{"actions":[{"action":"systemd_restart","target":"decode@gpu-1"}]}`),
		Policy: store.Policy{Approvers: []string{"sre-oncall"}, MinApprovals: 1},
	}
	for _, e := range edit {
		e(&p)
	}
	created, _, err := s.CreatePlan(testCtx(t), p)
	require.NoError(t, err)
	return created
}

// approve approves a one-approver plan and returns it in state approved.
func approve(t testing.TB, s store.Store, p store.Plan) store.Plan {
	t.Helper()
	res, err := s.RecordApproval(testCtx(t), store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: p.Hash})
	require.NoError(t, err)
	require.True(t, res.Settled)
	require.Equal(t, store.PlanApproved, res.Plan.State)
	return res.Plan
}

func move(t testing.TB, s store.Store, p store.Plan, to store.PlanState) store.Plan {
	t.Helper()
	moved, err := s.TransitionPlan(testCtx(t), store.Transition{PlanID: p.ID, From: p.State, To: to, Actor: "engine"})
	require.NoError(t, err)
	require.Equal(t, to, moved.State)
	return moved
}

// auditKinds lists the kinds of the audit entries matching f, in order.
func auditKinds(t testing.TB, s store.Store, f store.AuditFilter) []string {
	t.Helper()
	events, err := s.Audit(testCtx(t), f)
	require.NoError(t, err)
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = e.Kind
		if e.Kind == store.AuditPlanState {
			var d struct{ To string }
			require.NoError(t, json.Unmarshal(e.Detail, &d))
			kinds[i] = fmt.Sprintf("%s:%s", e.Kind, d.To)
		}
	}
	return kinds
}
