package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store is runbot's durable state, in the terms of its domain: runs and
// where they were posted, remediation plans with their approvals and
// actions, what was applied recently (rate limits and the circuit breaker),
// locks, the audit log, the alert inbox, the work queue and recovery after
// a crash. The engine, the bot and the CLI depend on it, never on a backend.
//
// The SQLite implementation (Open) is the default, for one machine; the
// PostgreSQL one (OpenPostgres) is for several processes on several hosts
// sharing one database. Both implement the interface with the same queries
// and pass the same conformance suite, package store/storetest; OpenURL
// opens either from a location. Every method is safe for concurrent use by
// several goroutines and by several processes that share the same database.
type Store interface {
	Runs
	Plans
	ApprovalLog
	ActionLog
	RateLimits
	Locks
	AuditLog
	Alerts
	WorkQueue
	ChatOutbox

	Replicas
	ScheduleTicks

	// MarkInterrupted is called at startup and then periodically (every
	// DefaultRecoveryInterval in serve). Runs left running, plans left
	// applying or verifying and work left started by a process that no
	// longer exists (its replica lease expired, or, on its own host, its
	// pid is gone) are recovered; what changed is returned and audited. A
	// run whose final report was stored is finished from it, never run
	// again; an interrupted plan is never resumed. Rows of processes that
	// still run are left alone.
	MarkInterrupted(ctx context.Context) (Recovery, error)
	// Ping proves the store answers a query that reads it, cheaply: the
	// daemon's readiness probe, run every few seconds.
	Ping(ctx context.Context) error
	// PingWrite proves the store takes a write, cheaply: it records this
	// process's heartbeat. A full disk, a read-only file or a database
	// that refuses writes fail it where Ping, a read, still succeeds.
	PingWrite(ctx context.Context) error
	// Now is the time on the database's clock as this process best knows
	// it: on PostgreSQL its own clock corrected by the offset measured at
	// open and at each lease renewal, elsewhere its own clock. Expiries
	// and record times are written on it, so a caller comparing a time
	// with them (an approval window, a plan's last change) reads Now, or
	// a host clock 30 s off would close windows 30 s early or late.
	Now() time.Time
	// Close releases the store's resources.
	Close() error
}

// Runs records runbook executions.
type Runs interface {
	// CreateRun inserts a run in state running. An empty ID is generated;
	// an empty StartedAt is now. The trigger must be one of TriggerKinds.
	CreateRun(ctx context.Context, r Run) (Run, error)
	// GetRun finds a run by its ID or by a unique prefix of it.
	GetRun(ctx context.Context, idOrPrefix string) (Run, error)
	// ListRuns returns runs newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]Run, error)
	// SetRunReport replaces the report of a running run (live progress).
	SetRunReport(ctx context.Context, id string, report json.RawMessage) error
	// FinishRun moves a running run to a final status with its outcome and
	// final report.
	FinishRun(ctx context.Context, id string, status RunStatus, outcome Outcome, report json.RawMessage) (Run, error)
	// SetRunMessage records where a chat front end posted the run.
	SetRunMessage(ctx context.Context, id string, ref MessageRef) error
}

// Plans records remediation plans and moves them through their states.
type Plans interface {
	// CreatePlan inserts a proposed plan. Older proposed plans of the same
	// remediation on the same deployment are superseded in the same
	// transaction and returned.
	CreatePlan(ctx context.Context, p Plan) (created Plan, superseded []Plan, err error)
	// GetPlan finds a plan by its ID or by a unique prefix of it.
	GetPlan(ctx context.Context, id string) (Plan, error)
	// ListPlans returns plans newest first.
	ListPlans(ctx context.Context, f PlanFilter) ([]Plan, error)
	// PendingPlans returns proposed plans that have not expired, oldest
	// first: the approval requests that must survive a restart.
	PendingPlans(ctx context.Context) ([]Plan, error)
	// ExpirePlans moves proposed and approved plans whose approval expired
	// to expired and returns them.
	ExpirePlans(ctx context.Context) ([]Plan, error)
	// TransitionPlan moves a plan from t.From to t.To with compare-and-set:
	// of two callers making the same move, exactly one succeeds and the
	// other gets a *StateConflictError. Moves to approved or denied are
	// refused with ErrNeedsApproval: RecordApproval makes them.
	TransitionPlan(ctx context.Context, t Transition) (Plan, error)
}

// ApprovalLog records who approved or denied a plan, bound to the plan hash
// they were shown.
type ApprovalLog interface {
	// RecordApproval records one approver's decision and, atomically, moves
	// the plan to approved or denied when the decision settles it. A
	// decision on another hash than the plan's, after its expiry, on a plan
	// no longer proposed, or by the requester under the two-person rule is
	// refused with an *ApprovalError.
	RecordApproval(ctx context.Context, a Approval) (ApprovalResult, error)
	// Approvals returns a plan's recorded decisions in the order they were
	// made.
	Approvals(ctx context.Context, planID string) ([]Approval, error)
}

// ActionLog records each action of a plan before and after its side effect.
type ActionLog interface {
	// StartAction records an action as started. Call it before the side
	// effect, so that a crash leaves a trace of what may have happened.
	// The plan must be applying.
	StartAction(ctx context.Context, a ActionRecord) (ActionRecord, error)
	// SetActionState records what became of a started action.
	SetActionState(ctx context.Context, planID string, index int, to ActionState, detail json.RawMessage) (ActionRecord, error)
	// Actions returns a plan's action records in plan order.
	Actions(ctx context.Context, planID string) ([]ActionRecord, error)
}

// RateLimits answers what the rate limit asks about the past: how often
// something was applied. (The circuit breaker reads the plans and their
// actions.)
type RateLimits interface {
	// CountApplied counts plans that started applying, for rate limits.
	CountApplied(ctx context.Context, f AppliedFilter) (int, error)
}

// Locks are leases on a key (e.g. "deployment/dsv4") that exclude other
// holders, in this process and in others, until released or expired.
type Locks interface {
	// Acquire takes the lock or returns a *LockedError naming its holder.
	Acquire(ctx context.Context, key, holder string, ttl time.Duration) (Lock, error)
	// Refresh extends a held lock; ErrLockLost if it was lost meanwhile.
	Refresh(ctx context.Context, l Lock, ttl time.Duration) (Lock, error)
	// Release gives the lock up; releasing a lost lock is ErrLockLost.
	Release(ctx context.Context, l Lock) error
}

// AuditLog is the append-only record of every state change. It deliberately
// offers no way to change or remove an entry.
type AuditLog interface {
	AppendAudit(ctx context.Context, e AuditEvent) (AuditEvent, error)
	Audit(ctx context.Context, f AuditFilter) ([]AuditEvent, error)
}

// Alerts is the durable inbox of Alertmanager deliveries and the dedup state
// per alert fingerprint.
type Alerts interface {
	// RecordAlert stores one delivered alert durably (the webhook answers
	// 2xx only after it returns) and folds it into the fingerprint's dedup
	// state. payload is one Alertmanager alert object; its "status" field
	// says firing or resolved.
	RecordAlert(ctx context.Context, fingerprint string, payload []byte, receivedAt time.Time) (AlertState, error)
	// GetAlert returns the dedup state of one fingerprint.
	GetAlert(ctx context.Context, fingerprint string) (AlertState, error)
	// RecentAlerts returns the states of fingerprints seen at or after since.
	RecentAlerts(ctx context.Context, since time.Time) ([]AlertState, error)
	// AlertDeliveries returns the stored deliveries of a fingerprint, oldest first.
	AlertDeliveries(ctx context.Context, fingerprint string) ([]AlertDelivery, error)
}

// WorkQueue holds accepted triggers until a worker has run them, so that work
// accepted before a restart is done after it.
type WorkQueue interface {
	// Enqueue adds pending work. Work with the Key of existing work is not
	// added again: the existing item is returned with created false.
	Enqueue(ctx context.Context, w Work) (item Work, created bool, err error)
	// ClaimWork moves the oldest pending work to started; ErrNoWork if none,
	// ErrLeaseExpired while this process's lease is expired.
	ClaimWork(ctx context.Context) (Work, error)
	// CompleteWork moves work this process started to done; a
	// *StateConflictError if it is not started by this process (any more).
	CompleteWork(ctx context.Context, id string) (Work, error)
	// ReturnWork moves work this process started, and under which it ran
	// nothing (its run could not be recorded), back to pending with its
	// attempt uncounted, so another worker (here or on a replica) may
	// claim it; a run row of it this process holds running (its creation
	// went through unconfirmed) ends interrupted. A *StateConflictError if
	// the work is not started by this process.
	ReturnWork(ctx context.Context, id string) (Work, error)
	GetWork(ctx context.Context, id string) (Work, error)
}
