package store_test

import (
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// Reopening a PostgreSQL database applies nothing twice and keeps its data.
func TestPostgresOpenIsIdempotent(t *testing.T) {
	dsn, ctx := postgresURL(t), testCtx(t)
	s := openPostgresAt(t, dsn)
	r := mkRun(t, s)
	require.NoError(t, s.Close())
	for range 3 {
		s = openPostgresAt(t, dsn)
		v, err := s.Version(ctx)
		require.NoError(t, err)
		require.Equal(t, store.PostgresSchemaVersion(), v)
		var rows int
		require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows))
		require.Equal(t, store.PostgresSchemaVersion(), rows)
		got, err := s.GetRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, r.ID, got.ID)
		require.NoError(t, s.Close())
	}
}

// Several processes open a brand-new database at once: each migration is
// applied once, and every one of them gets a working store.
func TestPostgresConcurrentOpenMigratesOnce(t *testing.T) {
	dsn, ctx := postgresURL(t), testCtx(t)
	const n = 4
	var wg sync.WaitGroup
	stores := make([]*store.Postgres, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range stores {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = store.OpenPostgres(ctx, dsn)
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		require.NoError(t, errs[i])
		defer func() { _ = s.Close() }() // test cleanup
	}
	var rows int
	require.NoError(t, stores[0].DB().QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&rows))
	require.Equal(t, store.PostgresSchemaVersion(), rows)
	for _, s := range stores {
		mkRun(t, s)
	}
}

func TestPostgresOpenRefusesANewerSchema(t *testing.T) {
	dsn := postgresURL(t)
	s := openPostgresAt(t, dsn)
	_, err := s.DB().ExecContext(testCtx(t), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future.sql', 0)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = store.OpenPostgres(testCtx(t), dsn)
	require.ErrorContains(t, err, "newer than this binary")
}

// The audit log is append-only on PostgreSQL too, even for raw SQL.
func TestPostgresAuditIsAppendOnly(t *testing.T) {
	s := openPostgresAt(t, postgresURL(t))
	mkRun(t, s)
	for _, q := range []string{`UPDATE audit SET actor = 'mallory'`, `DELETE FROM audit`, `TRUNCATE audit`} {
		_, err := s.DB().ExecContext(testCtx(t), q)
		require.ErrorContains(t, err, "audit log is append-only", q)
	}
}

// The PostgreSQL schema's CHECKs on trigger_type say what
// store.TriggerKinds says, as SQLite's do.
func TestPostgresTriggerCheckConstraintsMatchTriggerKinds(t *testing.T) {
	s := openPostgresAt(t, postgresURL(t))
	var want []string
	for _, k := range store.TriggerKinds() {
		want = append(want, string(k))
	}
	quoted := regexp.MustCompile(`'([^']*)'`)
	for _, table := range []string{"runs", "work"} {
		var def string
		require.NoError(t, s.DB().QueryRowContext(testCtx(t), `SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid = $1::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%trigger_type%'`, table).Scan(&def))
		var got []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			got = append(got, m[1])
		}
		require.ElementsMatch(t, want, got, "the CHECK on %s.trigger_type differs from store.TriggerKinds: %s", table, def)
	}
}

// The two backends' schemas have the same tables and columns, so that the
// queries they share find what they name in both; PostgreSQL adds the
// rowid SQLite has implicitly.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	ctx := testCtx(t)
	lite := openAt(t, dbPath(t))
	pg := openPostgresAt(t, postgresURL(t))
	liteCols := map[string][]string{}
	rows, err := lite.DB().QueryContext(ctx, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.name`)
	require.NoError(t, err)
	for rows.Next() {
		var table, col string
		require.NoError(t, rows.Scan(&table, &col))
		liteCols[table] = append(liteCols[table], col)
	}
	require.NoError(t, rows.Err())
	pgCols := map[string][]string{}
	rows, err = pg.DB().QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND column_name <> 'rowid' ORDER BY table_name, column_name COLLATE "C"`)
	require.NoError(t, err)
	for rows.Next() {
		var table, col string
		require.NoError(t, rows.Scan(&table, &col))
		pgCols[table] = append(pgCols[table], col)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, liteCols, pgCols)
}
