package store_test

import (
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
	stores := make([]*store.SQLite, 8)
	errs := make([]error, 8)
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
