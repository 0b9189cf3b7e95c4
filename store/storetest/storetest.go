// Package storetest is the conformance suite of store.Store: the behaviour
// the engine, the bot and the CLI rely on, which every backend must show.
// A backend runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Open {
//			db := newEmptyDatabase(t)
//			return func(t *testing.T, o storetest.Options) store.Store {
//				return openBackend(t, db, o) // closed when t ends
//			}
//		})
//	}
//
// The suite covers runs (create, report, finish, lookups, list filters,
// trigger kinds), message references, plans and their state machine,
// approvals bound to the plan hash, actions, the counts behind rate limits
// and the circuit breaker, the audit trail, locks, the alert inbox and its
// dedup, the work queue, recovery after a process died, and the contested
// calls of several replicas at once (claims, locks, alert dedup,
// approvals, proposals, recovery). Several stores
// opened on one database play several processes (a restart, a replica);
// Options.Alive lets the suite declare one of them dead, so recovery is
// tested without killing anything. What depends on how a backend is built
// (files, migrations, real processes dying) is tested by the backend.
//
// The helpers the suite uses are exported for backend-specific tests.
package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// Options are what the suite controls in a store it opens. A backend must
// pass every one of them on to its store.
type Options struct {
	// Now is the store's clock for record times, lock and approval expiry
	// and dedup windows.
	Now func() time.Time
	// DedupWindow is how long repeated firing deliveries of an alert are
	// folded into the trigger they started.
	DedupWindow time.Duration
	// Owner names the process the store acts for in the rows it claims
	// (running runs, applying plans, started work).
	Owner string
	// Alive tells MarkInterrupted whether the owner of a row still runs;
	// the store's own Owner always does.
	Alive func(owner string) bool
}

// Open opens a store on one test's database. Each call is one more process
// on the same data: a restart, a replica. The store is closed when t ends;
// the suite may close it earlier, so closing twice must be harmless.
type Open func(t *testing.T, o Options) store.Store

// Backend creates a new, empty database for the test t and returns how to
// open stores on it.
type Backend func(t *testing.T) Open

// DedupWindow is the alert dedup window the suite opens stores with.
const DedupWindow = time.Hour

// Epoch is when the suite's clocks start.
var Epoch = time.Date(2026, 11, 29, 8, 30, 12, 0, time.UTC)

type test struct {
	name string
	fn   func(t *testing.T, e *Env)
}

type group struct {
	name  string
	tests []test
}

// Run runs the conformance suite against the backend, one subtest per
// group (Runs, Messages, Plans, Approvals, Actions, RateLimits, Audit,
// Locks, Alerts, Work, Recovery, Replicas, Leases, Ticks, Outbox) and per behaviour inside it,
// each on a new database.
func Run(t *testing.T, b Backend) {
	t.Helper()
	for _, g := range []group{
		{"Runs", runTests},
		{"Messages", messageTests},
		{"Plans", planTests},
		{"Approvals", approvalTests},
		{"Actions", actionTests},
		{"RateLimits", rateLimitTests},
		{"Audit", auditTests},
		{"Locks", lockTests},
		{"Alerts", alertTests},
		{"Work", workTests},
		{"Recovery", recoveryTests},
		{"Replicas", replicaTests},
		{"Leases", leaseTests},
		{"Ticks", tickTests},
		{"Outbox", outboxTests},
	} {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, NewEnv(t, b)) })
			}
		})
	}
}

// Env is one test's database: the clock every store on it reads, the
// processes that own its rows, and the store of the test's own process.
type Env struct {
	// S is the store of the test's own process, owned by MainOwner, which
	// never dies.
	S       store.Store
	Clock   *Clock
	backend Backend
	open    Open
	mu      sync.Mutex
	dead    map[string]bool
}

// MainOwner owns the rows the Env's own store claims.
const MainOwner = "storetest/main"

// NewEnv creates a new database on b and opens the test's own store on it.
func NewEnv(t *testing.T, b Backend) *Env {
	t.Helper()
	e := &Env{Clock: NewClock(), backend: b, open: b(t), dead: map[string]bool{}}
	e.S = e.OpenAs(t, MainOwner)
	return e
}

// OpenAs opens another store on the same database, as the process named
// owner would.
func (e *Env) OpenAs(t *testing.T, owner string) store.Store {
	t.Helper()
	s := e.open(t, Options{Now: e.Clock.Now, DedupWindow: DedupWindow, Owner: owner, Alive: e.alive})
	require.NotNil(t, s)
	return s
}

// Reopen closes the test's own store and opens it again: a restart.
func (e *Env) Reopen(t *testing.T) store.Store {
	t.Helper()
	require.NoError(t, e.S.Close())
	e.S = e.OpenAs(t, MainOwner)
	return e.S
}

// Kill declares the process named owner dead, as if it had crashed: its
// store is left as it was, unclosed, and nothing it started is finished.
func (e *Env) Kill(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead[owner] = true
}

func (e *Env) alive(owner string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.dead[owner]
}

// Clock is a settable clock for Options.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return NewClockAt(Epoch) }

// NewClockAt returns a clock at t.
func NewClockAt(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// CreateRun creates a running run of the wedge runbook, as a Slack command
// would.
func CreateRun(tb testing.TB, s store.Store) store.Run {
	tb.Helper()
	r, err := s.CreateRun(tb.Context(), store.Run{
		Runbook: "sglang-pd-wedge", Trigger: store.TriggerChat, RequestedBy: "U-alice",
		Params: map[string]string{"deployment": "dsv4"},
	})
	require.NoError(tb, err)
	return r
}

// ProposePlan creates a proposed plan for a new run; edit adjusts it first.
func ProposePlan(tb testing.TB, s store.Store, edit ...func(*store.Plan)) store.Plan {
	tb.Helper()
	run := CreateRun(tb, s)
	p := store.Plan{
		RunID: run.ID, Remediation: "disable_overlap_and_restart", Diagnosis: "pd_transfer_wedge",
		Deployment: "dsv4", Hash: "sha256:aaaa", RequestedBy: "U-alice",
		Body:   json.RawMessage(`{"actions":[{"action":"systemd_restart","target":"decode@gpu-1"}]}`),
		Policy: store.Policy{Approvers: []string{"sre-oncall"}, MinApprovals: 1},
	}
	for _, e := range edit {
		e(&p)
	}
	created, _, err := s.CreatePlan(tb.Context(), p)
	require.NoError(tb, err)
	return created
}

// Approve approves a one-approver plan and returns it in state approved.
func Approve(tb testing.TB, s store.Store, p store.Plan) store.Plan {
	tb.Helper()
	res, err := s.RecordApproval(tb.Context(), store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: p.Hash})
	require.NoError(tb, err)
	require.True(tb, res.Settled)
	require.Equal(tb, store.PlanApproved, res.Plan.State)
	return res.Plan
}

// Move moves a plan from its state to to.
func Move(tb testing.TB, s store.Store, p store.Plan, to store.PlanState) store.Plan {
	tb.Helper()
	moved, err := s.TransitionPlan(tb.Context(), store.Transition{PlanID: p.ID, From: p.State, To: to, Actor: "engine"})
	require.NoError(tb, err)
	require.Equal(tb, to, moved.State)
	return moved
}

// AuditKinds lists the kinds of the audit entries matching f, in order;
// plan state changes read "plan.state:<to>".
func AuditKinds(tb testing.TB, s store.Store, f store.AuditFilter) []string {
	tb.Helper()
	events, err := s.Audit(tb.Context(), f)
	require.NoError(tb, err)
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = e.Kind
		if e.Kind == store.AuditPlanState {
			var d struct{ To string }
			require.NoError(tb, json.Unmarshal(e.Detail, &d))
			kinds[i] = fmt.Sprintf("%s:%s", e.Kind, d.To)
		}
	}
	return kinds
}

// AlertPayload is one Alertmanager alert object with the given status.
func AlertPayload(status string) []byte {
	return fmt.Appendf(nil, `{"status":%q,"labels":{"alertname":"SGLangRequestsHanging","deployment":"dsv4"},
		"startsAt":"2026-11-29T08:29:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"a1b2c3d4e5f60718"}`, status)
}

// FinalReport is a run's result as the engine reports it: its outcome
// (critical) and when it finished (08:30:36) are set.
func FinalReport(runID string) json.RawMessage {
	return json.RawMessage(`{"run_id":"` + runID + `","outcome":"critical","started_at":"2026-11-29T08:30:00Z","finished_at":"2026-11-29T08:30:36Z","steps":[]}`)
}

// PlanIDs lists the IDs of plans, in order.
func PlanIDs(ps []store.Plan) []string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return ids
}
