package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/internal/pgtest"
	"github.com/runbot/runbot/store/storetest"
)

// The PostgreSQL store passes the conformance suite every backend must
// pass, on a real server. Each test gets a new database; every store the
// suite opens on it is one more process (a restart, a replica).
func TestPostgresConformance(t *testing.T) {
	storetest.Run(t, postgresBackend)
}

func postgresBackend(t *testing.T) storetest.Open {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	return func(t *testing.T, o storetest.Options) store.Store {
		t.Helper()
		s, err := store.OpenPostgres(t.Context(), dsn, store.WithNow(o.Now), store.WithDedupWindow(o.DedupWindow),
			store.WithOwner(o.Owner), store.WithOwnerAlive(o.Alive))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() }) // test cleanup; the suite may have closed it already
		return s
	}
}
