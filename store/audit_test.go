package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// The audit log can only grow, even past the store: raw SQL that tries to
// change or remove an entry is aborted by the schema's triggers. (That the
// Store and *SQLite offer no such method is in the conformance suite.)
func TestAuditLogIsAppendOnlyInSQL(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	e, err := s.AppendAudit(ctx, store.AuditEvent{Kind: "slack.posted", Actor: "runbot", Detail: json.RawMessage(`{"ts":"1.2"}`)})
	require.NoError(t, err)
	for _, q := range []string{
		`UPDATE audit SET actor = 'mallory' WHERE id = ?`,
		`DELETE FROM audit WHERE id = ?`,
	} {
		_, err := s.DB().ExecContext(ctx, q, e.ID)
		require.ErrorContains(t, err, "append-only", q)
	}
	got, err := s.Audit(ctx, store.AuditFilter{Kind: "slack.posted"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, e, got[0])
}
