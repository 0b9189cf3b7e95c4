package store_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// The audit log can only grow: neither the Store interface nor the SQLite
// type offers a method that changes or removes entries, and raw SQL that
// tries is aborted by the schema.
func TestAuditLogIsAppendOnly(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[store.Store](), reflect.TypeFor[*store.SQLite]()} {
		var auditMethods []string
		for m := range typ.Methods() {
			if strings.Contains(strings.ToLower(m.Name), "audit") {
				auditMethods = append(auditMethods, m.Name)
			}
		}
		require.ElementsMatch(t, []string{"AppendAudit", "Audit"}, auditMethods, typ.String())
	}
	audit := reflect.TypeFor[store.AuditLog]()
	require.Equal(t, 2, audit.NumMethod())

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

func TestAuditSurvivesReopen(t *testing.T) {
	path := dbPath(t)
	c := newClock()
	s := openAt(t, path, store.WithNow(c.Now))
	p := move(t, s, approve(t, s, mkPlan(t, s)), store.PlanApplying)
	before, err := s.Audit(testCtx(t), store.AuditFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, before)
	require.NoError(t, s.Close())

	s = openAt(t, path, store.WithNow(c.Now))
	after, err := s.Audit(testCtx(t), store.AuditFilter{})
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Equal(t, []string{"plan.created", "plan.approval", "plan.state:approved", "plan.state:applying"},
		auditKinds(t, s, store.AuditFilter{PlanID: p.ID}))

	// New entries continue the sequence.
	e, err := s.AppendAudit(testCtx(t), store.AuditEvent{Kind: "note"})
	require.NoError(t, err)
	require.Greater(t, e.ID, after[len(after)-1].ID)
}

func TestAuditFilters(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	r1, r2 := mkRun(t, s), mkRun(t, s)
	all, err := s.Audit(ctx, store.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, all, 2)

	got, err := s.Audit(ctx, store.AuditFilter{RunID: r2.ID})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, r2.ID, got[0].RunID)

	got, err = s.Audit(ctx, store.AuditFilter{AfterID: all[0].ID})
	require.NoError(t, err)
	require.Equal(t, all[1:], got)

	got, err = s.Audit(ctx, store.AuditFilter{Kind: store.AuditRunCreated, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, r1.ID, got[0].RunID)

	_, err = s.AppendAudit(ctx, store.AuditEvent{})
	require.Error(t, err, "kind is required")
	_, err = s.AppendAudit(ctx, store.AuditEvent{Kind: "x", Detail: json.RawMessage(`nope`)})
	require.Error(t, err, "detail must be JSON")
}
