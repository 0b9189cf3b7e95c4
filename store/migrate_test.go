package store_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// Reopening a database applies nothing twice and keeps its data; the
// connection settings the store relies on are in force.
func TestOpenIsIdempotentAndConfiguresSQLite(t *testing.T) {
	path := dbPath(t)
	ctx := testCtx(t)
	s := openAt(t, path)
	r := mkRun(t, s)
	require.NoError(t, s.Close())

	for range 3 {
		s = openAt(t, path)
		v, err := s.Version(ctx)
		require.NoError(t, err)
		require.Equal(t, store.SchemaVersion(), v)
		var rows int
		require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows))
		require.Equal(t, store.SchemaVersion(), rows)
		got, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r.ID, got.ID)
		require.NoError(t, s.Close())
	}

	s = openAt(t, path)
	for pragma, want := range map[string]string{
		"journal_mode": "wal",
		"foreign_keys": "1",
		"busy_timeout": "10000",
		"synchronous":  "2", // FULL
	} {
		var got string
		require.NoError(t, s.DB().QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got))
		require.Equal(t, want, got, pragma)
	}
}

func TestSchemaVersionCountsEmbeddedMigrations(t *testing.T) {
	require.GreaterOrEqual(t, store.SchemaVersion(), 1)
}

// Several openers of a brand-new file race to migrate it: each migration
// is applied once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	path := dbPath(t)
	var wg sync.WaitGroup
	stores := make([]*store.SQLite, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = store.Open(testCtx(t), path) })
	}
	wg.Wait()
	for i, s := range stores {
		require.NoError(t, errs[i])
		defer func() { _ = s.Close() }() // test cleanup
	}
	var rows int
	require.NoError(t, stores[0].DB().QueryRowContext(testCtx(t), `SELECT count(*) FROM schema_migrations`).Scan(&rows))
	require.Equal(t, store.SchemaVersion(), rows)
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	path := dbPath(t)
	s := openAt(t, path)
	_, err := s.DB().ExecContext(testCtx(t), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future.sql', 0)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = store.Open(testCtx(t), path)
	require.ErrorContains(t, err, "newer than this binary")
}

func TestOpenRefusesBadPath(t *testing.T) {
	_, err := store.Open(testCtx(t), "")
	require.Error(t, err)
	_, err = store.Open(testCtx(t), t.TempDir()+"/no/such/dir/runbot.db")
	require.Error(t, err)
}

// A database written by a binary at schema version 1 keeps its action
// records through migration 2, which rebuilds the actions table to allow
// the rerun states.
func TestUpgradeFromVersion1KeepsActions(t *testing.T) {
	path := dbPath(t)
	ctx := testCtx(t)
	s := openAt(t, path)
	p := move(t, s, approve(t, s, mkPlan(t, s)), store.PlanApplying)
	_, err := s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"})
	require.NoError(t, err)
	_, err = s.SetActionState(ctx, p.ID, 0, store.ActionDone, json.RawMessage(`{"changed":true}`))
	require.NoError(t, err)
	// Turn the file back into what version 1 wrote.
	_, err = s.DB().ExecContext(ctx, `
		CREATE TABLE actions_v1 (
			plan_id TEXT NOT NULL REFERENCES plans (id), idx INTEGER NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL,
			state TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed', 'rolled_back', 'rollback_failed')),
			detail TEXT, started_at INTEGER NOT NULL, finished_at INTEGER, PRIMARY KEY (plan_id, idx)) STRICT;
		INSERT INTO actions_v1 SELECT * FROM actions;
		DROP TABLE actions;
		ALTER TABLE actions_v1 RENAME TO actions;
		DELETE FROM schema_migrations WHERE version > 1;`)
	require.NoError(t, err)
	v, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	_, err = s.SetActionState(ctx, p.ID, 0, store.ActionRerunning, nil)
	require.ErrorContains(t, err, "CHECK constraint failed", "version 1 has no rerun states")
	require.NoError(t, s.Close())

	s = openAt(t, path)
	v, err = s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, store.SchemaVersion(), v)
	acts, err := s.Actions(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, store.ActionDone, acts[0].State)
	require.JSONEq(t, `{"changed":true}`, string(acts[0].Detail))
	got, err := s.SetActionState(ctx, p.ID, 0, store.ActionRerunning, nil)
	require.NoError(t, err)
	require.Equal(t, store.ActionRerunning, got.State)
}
