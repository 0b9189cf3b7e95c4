package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openAtVersion makes a new database at schema version v, as a binary of
// that version would have created it: only migrations 1 to v are applied.
// Methods whose tables did not change since v work on it.
func openAtVersion(t *testing.T, ctx context.Context, path string, v int) *SQLite {
	t.Helper()
	ms, err := sqliteMigrations.load()
	require.NoError(t, err)
	require.Less(t, v, len(ms))
	db, err := sql.Open("sqlite", dsn(path, 10*time.Second))
	require.NoError(t, err)
	s := &SQLite{sqlStore{db: db, d: sqliteDialect, now: time.Now, owner: processOwner(), alive: ownerAlive, writeSlot: make(chan struct{}, 1)}}
	require.NoError(t, s.applyMigrations(ctx, ms[:v]))
	got, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, v, got)
	return s
}

func upgradeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// A database written by a binary at schema version 1 keeps its action
// records through migration 2, which rebuilds the actions table to allow
// the rerun states.
func TestUpgradeFromVersion1KeepsActions(t *testing.T) {
	ctx := upgradeCtx(t)
	path := filepath.Join(t.TempDir(), "runbot.db")
	s := openAtVersion(t, ctx, path, 1)
	// Version 1's runs table is not today's, so the run is written as
	// version 1 wrote it; plans, approvals and actions go through the
	// store, whose queries on them are the same since version 1.
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, runbook, trigger_type, requested_by, params, status, started_at)
		VALUES ('r-1', 'sglang-pd-wedge', 'slack', 'U-alice', '{}', 'running', 1)`)
	require.NoError(t, err)
	p, _, err := s.CreatePlan(ctx, Plan{RunID: "r-1", Remediation: "restart", Deployment: "dsv4", Hash: "h1", Body: json.RawMessage(`{}`),
		RequestedBy: "U-alice"})
	require.NoError(t, err)
	_, err = s.RecordApproval(ctx, Approval{PlanID: p.ID, User: "U-bob", Decision: Approve, PlanHash: "h1"})
	require.NoError(t, err)
	_, err = s.TransitionPlan(ctx, Transition{PlanID: p.ID, From: PlanApproved, To: PlanApplying})
	require.NoError(t, err)
	_, err = s.StartAction(ctx, ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"})
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 0, ActionDone, json.RawMessage(`{"changed":true}`))
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 0, ActionRerunning, nil)
	require.ErrorContains(t, err, "CHECK constraint failed", "version 1 has no rerun states")
	require.NoError(t, s.Close())

	s, err = Open(ctx, path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	v, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaVersion(), v)
	acts, err := s.Actions(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, ActionDone, acts[0].State)
	require.JSONEq(t, `{"changed":true}`, string(acts[0].Detail))
	got, err := s.SetActionState(ctx, p.ID, 0, ActionRerunning, nil)
	require.NoError(t, err)
	require.Equal(t, ActionRerunning, got.State)
}

// A database written by a binary at schema version 2 kept Slack's message
// reference in slack_channel and slack_ts; migration 3 turns them into
// platform-neutral references without losing one, and leaves runs that
// were never posted without one.
func TestUpgradeFromVersion2KeepsMessageRefs(t *testing.T) {
	ctx := upgradeCtx(t)
	path := filepath.Join(t.TempDir(), "runbot.db")
	s := openAtVersion(t, ctx, path, 2)
	// The rows as version 2's CreateRun, FinishRun and SetRunSlack wrote them.
	_, err := s.db.ExecContext(ctx, `INSERT INTO runs (id, runbook, trigger_type, requested_by, params, status, outcome,
			started_at, finished_at, report, slack_channel, slack_ts, work_id, owner) VALUES
		('r-posted', 'sglang-pd-wedge', 'slack', 'U-alice', '{"deployment":"dsv4"}', 'finished', 'critical',
			1000, 2000, '{"outcome":"critical"}', 'C1', '1700000000.000100', NULL, 'host/1/2'),
		('r-quiet', 'host-basics', 'cli', 'alice', '{}', 'running', '', 3000, NULL, NULL, NULL, NULL, NULL, 'host/1/2')`)
	require.NoError(t, err)
	_, err = s.db.ExecContext(ctx, `INSERT INTO plans (id, run_id, remediation, deployment, hash, body, policy, state, created_at, updated_at)
		VALUES ('p-1', 'r-posted', 'restart', 'dsv4', 'h1', '{}', '{}', 'proposed', 1000, 1000)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = Open(ctx, path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	v, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, SchemaVersion(), v)

	posted, err := s.GetRun(ctx, "r-posted")
	require.NoError(t, err)
	require.Equal(t, &MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}, posted.Message)
	require.Equal(t, RunFinished, posted.Status)
	require.Equal(t, OutcomeCritical, posted.Outcome)
	require.Equal(t, map[string]string{"deployment": "dsv4"}, posted.Params)
	require.JSONEq(t, `{"outcome":"critical"}`, string(posted.Report))
	require.Equal(t, time.Unix(0, 2000).UTC(), posted.FinishedAt)

	quiet, err := s.GetRun(ctx, "r-quiet")
	require.NoError(t, err)
	require.Nil(t, quiet.Message)
	require.NoError(t, s.SetRunMessage(ctx, quiet.ID, MessageRef{Platform: "slack", Channel: "C2", ID: "1.2"}))
	quiet, err = s.GetRun(ctx, "r-quiet")
	require.NoError(t, err)
	require.Equal(t, &MessageRef{Platform: "slack", Channel: "C2", ID: "1.2"}, quiet.Message)

	plan, err := s.GetPlan(ctx, "p-1")
	require.NoError(t, err)
	require.Equal(t, "r-posted", plan.RunID)

	_, err = s.db.ExecContext(ctx, `SELECT slack_channel, slack_ts FROM runs`)
	require.ErrorContains(t, err, "no such column", "the Slack columns are gone")
}
