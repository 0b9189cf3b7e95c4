package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/internal/pgtest"
	"github.com/runbot/runbot/store/storetest"
)

func TestMain(m *testing.M) {
	// The cross-process tests re-execute this binary as a child that opens
	// the same database file; see child_test.go.
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	// pgtest.Main stops the binary's PostgreSQL cluster, if a test
	// started one.
	os.Exit(pgtest.Main(m))
}

// The SQLite-specific tests use the conformance suite's helpers.
var (
	mkRun           = storetest.CreateRun
	mkPlan          = storetest.ProposePlan
	approve         = storetest.Approve
	move            = storetest.Move
	auditKinds      = storetest.AuditKinds
	alertPayload    = storetest.AlertPayload
	finalReportJSON = storetest.FinalReport
)

func testCtx(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

func dbPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "runbot.db")
}

// openAt opens the store at path and closes it when the test ends.
func openAt(tb testing.TB, path string, opts ...store.Option) *store.SQLite {
	tb.Helper()
	s, err := store.Open(testCtx(tb), path, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() }) // test cleanup
	return s
}

// openTest opens a fresh store on a fake clock.
func openTest(tb testing.TB) (*store.SQLite, *storetest.Clock) {
	tb.Helper()
	c := storetest.NewClock()
	return openAt(tb, dbPath(tb), store.WithNow(c.Now)), c
}

// postgresURL creates a new database on the test binary's PostgreSQL
// cluster and returns its postgres:// URL.
func postgresURL(tb testing.TB) string {
	tb.Helper()
	return pgtest.NewDatabase(tb)
}

// openPostgresAt opens the PostgreSQL store at dsn and closes it when the
// test ends.
func openPostgresAt(tb testing.TB, dsn string, opts ...store.Option) *store.Postgres {
	tb.Helper()
	s, err := store.OpenPostgres(testCtx(tb), dsn, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() }) // test cleanup
	return s
}
