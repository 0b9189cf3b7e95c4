package storetest

import (
	"testing"

	"github.com/runbot/runbot/store/internal/pgtest"
)

// PostgresDatabase creates an empty database on the test binary's
// throwaway PostgreSQL cluster (a real server from the Debian postgresql
// package, started on first use) and returns its postgres:// URL; the
// database is dropped when tb ends. Tests outside package store reach the
// cluster through it: the tests of several replicas sharing one database.
func PostgresDatabase(tb testing.TB) string {
	tb.Helper()
	return pgtest.NewDatabase(tb)
}

// PostgresMain runs the tests of m and then stops the cluster if one was
// started; a test binary that calls PostgresDatabase calls it from its
// TestMain: os.Exit(storetest.PostgresMain(m)).
func PostgresMain(m *testing.M) int { return pgtest.Main(m) }

// StopPostgres stops the throwaway cluster if one was started: for a
// TestMain that wraps m.Run otherwise and so cannot call PostgresMain.
func StopPostgres() error { return pgtest.StopCluster() }

// PostgresPair starts a PostgreSQL primary streaming synchronously to a
// standby for tb, and stops both when tb ends: DSN reaches whichever
// takes writes (target_session_attrs=read-write), KillPrimary crashes the
// primary's machine as far as PostgreSQL can tell, Promote promotes the
// standby.
func PostgresPair(tb testing.TB) *pgtest.Pair {
	tb.Helper()
	return pgtest.NewPair(tb)
}
