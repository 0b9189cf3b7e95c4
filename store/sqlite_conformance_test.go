package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// The SQLite store passes the conformance suite every backend must pass.
// Each test gets a new file; every store the suite opens on it is one more
// process's view of that file.
func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, sqliteBackend)
}

func sqliteBackend(t *testing.T) storetest.Open {
	t.Helper()
	path := dbPath(t)
	return func(t *testing.T, o storetest.Options) store.Store {
		t.Helper()
		s, err := store.Open(t.Context(), path, store.WithNow(o.Now), store.WithDedupWindow(o.DedupWindow),
			store.WithOwner(o.Owner), store.WithOwnerAlive(o.Alive))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() }) // test cleanup; the suite may have closed it already
		return s
	}
}
