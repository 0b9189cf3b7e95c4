package store_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want store.Location
	}{
		{"/var/lib/runbot/runbot.db", store.Location{Backend: store.BackendSQLite, Path: "/var/lib/runbot/runbot.db"}},
		{"runbot.db", store.Location{Backend: store.BackendSQLite, Path: "runbot.db"}},
		{"sqlite:///var/lib/runbot/runbot.db", store.Location{Backend: store.BackendSQLite, Path: "/var/lib/runbot/runbot.db"}},
		{"sqlite:runbot.db", store.Location{Backend: store.BackendSQLite, Path: "runbot.db"}},
		{"postgres://runbot@db.internal:5432/runbot?sslmode=verify-full",
			store.Location{Backend: store.BackendPostgres, DSN: "postgres://runbot@db.internal:5432/runbot?sslmode=verify-full"}},
		{"postgresql:///runbot?host=/run/postgresql", store.Location{Backend: store.BackendPostgres, DSN: "postgresql:///runbot?host=/run/postgresql"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := store.ParseLocation(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// A location that cannot be opened is refused with a reason; none of the
// errors, whatever failed, holds the password the location carried.
func TestOpenURLNeverPrintsThePassword(t *testing.T) {
	const pw = "s3cret-Pw_42"
	missing := filepath.Join(t.TempDir(), "no-server-here")
	for _, tc := range []struct {
		name, location, want string
	}{
		{"empty", "", "store location is empty"},
		{"unknown scheme", "mysql://alice:" + pw + "@db/runbot", "unknown scheme \"mysql\""},
		{"sqlite with a host", "sqlite://alice:" + pw + "@db/runbot.db", "names a file on this host"},
		{"postgres without //", "postgres:alice:" + pw + "@db", "is a URL"},
		{"bad port", "postgres://alice:" + pw + "@db:notaport/runbot", "open store postgres://alice:xxxxx@"},
		{"no server", "postgres://alice:" + pw + "@/runbot?host=" + missing, "open store postgres://alice:xxxxx@/runbot"},
		{"password in the query", "postgres://alice@/runbot?password=" + pw + "&host=" + missing, "password=xxxxx"},
		{"percent-encoded password", "postgres://alice:s3cret%2DPw_42@/runbot?host=" + missing, "alice:xxxxx@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.OpenURL(testCtx(t), tc.location)
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			require.NotContains(t, err.Error(), pw)
			require.NotContains(t, err.Error(), "s3cret")
		})
	}
}

// A key=value connection string keeps its password out of errors too.
func TestOpenPostgresKeyValueDSNNeverPrintsThePassword(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-server-here")
	for _, dsn := range []string{
		"host=" + missing + " user=alice password=s3cret-pw dbname=runbot",
		"host=" + missing + " user=alice password='s3cret pw' dbname=runbot",
	} {
		_, err := store.OpenPostgres(testCtx(t), dsn)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "s3cret")
		require.Contains(t, err.Error(), "password=xxxxx")
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://alice:pw@db/runbot":        "postgres://alice:xxxxx@db/runbot",
		"postgres://alice@db/runbot":           "postgres://alice@db/runbot",
		"postgres://db/runbot?password=pw":     "postgres://db/runbot?password=xxxxx",
		"host=db user=alice password=pw":       "host=db user=alice password=xxxxx",
		"host=db password='p w' user=alice":    "host=db password=xxxxx user=alice",
		"/var/lib/runbot/runbot.db":            "/var/lib/runbot/runbot.db",
		"sqlite:///var/lib/runbot/runbot.db":   "sqlite:///var/lib/runbot/runbot.db",
		"postgresql://alice:p%40ss@db:5432/rb": "postgresql://alice:xxxxx@db:5432/rb",
	} {
		require.Equal(t, want, store.RedactDSN(in), in)
	}
}

// OpenURL opens each backend from its location, on real databases.
func TestOpenURLOpensEachBackend(t *testing.T) {
	path := dbPath(t)
	for _, loc := range []string{path, "sqlite://" + path} {
		s, err := store.OpenURL(testCtx(t), loc)
		require.NoError(t, err)
		_, ok := s.(*store.SQLite)
		require.True(t, ok, "%s opens SQLite", loc)
		require.NoError(t, s.Close())
	}
	s, err := store.OpenURL(testCtx(t), postgresURL(t))
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	_, ok := s.(*store.Postgres)
	require.True(t, ok)
	r := mkRun(t, s)
	got, err := s.GetRun(testCtx(t), r.ID)
	require.NoError(t, err)
	require.Equal(t, r.ID, got.ID)
}
