package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store/internal/pgtest"
)

// openPostgresAtVersion makes a new PostgreSQL database at schema version
// v, as a binary of that version would have created it: only migrations 1
// to v are applied. It returns the database's URL with the store.
func openPostgresAtVersion(t *testing.T, ctx context.Context, v int) (*Postgres, string) {
	t.Helper()
	ms, err := postgresMigrations.load()
	require.NoError(t, err)
	require.LessOrEqual(t, v, len(ms))
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	require.NoError(t, err)
	s := &Postgres{sqlStore{db: stdlib.OpenDB(*cfg), d: postgresDialect, now: time.Now, owner: processOwner(), alive: ownerAlive}}
	require.NoError(t, s.applyMigrations(ctx, ms[:v]))
	got, err := s.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, v, got)
	return s, dsn
}

// A PostgreSQL database written before the chat trigger kind was renamed
// reads "chat" wherever it stored "slack" once migration 7 has run, and
// keeps everything else.
func TestPostgresUpgradeRenamesSlackTriggerToChat(t *testing.T) {
	ctx := upgradeCtx(t)
	old, dsn := openPostgresAtVersion(t, ctx, postgresBeforeChatTrigger)
	checkChatTriggerUpgrade(t, ctx, &old.sqlStore, func() *sqlStore {
		s, err := OpenPostgres(ctx, dsn)
		require.NoError(t, err)
		v, err := s.Version(ctx)
		require.NoError(t, err)
		require.Equal(t, PostgresSchemaVersion(), v)
		return &s.sqlStore
	})
}
