package storetest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var auditTests = []test{
	{"AppendOnly", testAuditLogIsAppendOnly},
	{"SurvivesReopen", testAuditSurvivesReopen},
	{"Filters", testAuditFilters},
	{"Order", testAuditOrder},
}

// The audit log can only grow: neither the Store interface nor the
// backend's type offers a method that changes or removes entries, and an
// appended entry reads back as it was written. (A backend also refuses
// changes made past it, e.g. in raw SQL; that is its own test.)
func testAuditLogIsAppendOnly(t *testing.T, e *Env) {
	for _, typ := range []reflect.Type{reflect.TypeFor[store.Store](), reflect.TypeOf(e.S)} {
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

	s, ctx := e.S, t.Context()
	ev, err := s.AppendAudit(ctx, store.AuditEvent{Kind: "slack.posted", Actor: "runbot", Detail: json.RawMessage(`{"ts":"1.2"}`)})
	require.NoError(t, err)
	require.Equal(t, e.Clock.Now(), ev.At, "an empty time is now")
	got, err := s.Audit(ctx, store.AuditFilter{Kind: "slack.posted"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, ev, got[0])
}

func testAuditSurvivesReopen(t *testing.T, e *Env) {
	s := e.S
	p := Move(t, s, Approve(t, s, ProposePlan(t, s)), store.PlanApplying)
	before, err := s.Audit(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, before)

	s = e.Reopen(t)
	after, err := s.Audit(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Equal(t, []string{"plan.created", "plan.approval", "plan.state:approved", "plan.state:applying"},
		AuditKinds(t, s, store.AuditFilter{PlanID: p.ID}))

	// New entries continue the sequence.
	ev, err := s.AppendAudit(t.Context(), store.AuditEvent{Kind: "note"})
	require.NoError(t, err)
	require.Greater(t, ev.ID, after[len(after)-1].ID)
}

func testAuditFilters(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	r1, r2 := CreateRun(t, s), CreateRun(t, s)
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

	e.Clock.Advance(1)
	since := e.Clock.Now()
	r3 := CreateRun(t, s)
	got, err = s.Audit(ctx, store.AuditFilter{Since: since})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, r3.ID, got[0].RunID)

	_, err = s.AppendAudit(ctx, store.AuditEvent{})
	require.Error(t, err, "kind is required")
	_, err = s.AppendAudit(ctx, store.AuditEvent{Kind: "x", Detail: json.RawMessage(`nope`)})
	require.Error(t, err, "detail must be JSON")
}

// The log reads in the order things happened, whichever process wrote
// them, and entries written by the store itself are in the transaction of
// the change they record: a remediation's trail reads as it went.
func testAuditOrder(t *testing.T, e *Env) {
	other := e.OpenAs(t, "storetest/replica")
	p := ProposePlan(t, e.S)
	res, err := other.RecordApproval(t.Context(), store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: p.Hash})
	require.NoError(t, err)
	p = Move(t, e.S, res.Plan, store.PlanApplying)
	_, err = other.AppendAudit(t.Context(), store.AuditEvent{PlanID: p.ID, Kind: "chat.updated", Actor: "runbot"})
	require.NoError(t, err)
	p = Move(t, e.S, p, store.PlanVerifying)
	Move(t, other, p, store.PlanDone)

	want := []string{"plan.created", "plan.approval", "plan.state:approved", "plan.state:applying", "chat.updated",
		"plan.state:verifying", "plan.state:done"}
	require.Equal(t, want, AuditKinds(t, e.S, store.AuditFilter{PlanID: p.ID}))
	require.Equal(t, want, AuditKinds(t, other, store.AuditFilter{PlanID: p.ID}))
	events, err := e.S.Audit(t.Context(), store.AuditFilter{})
	require.NoError(t, err)
	for i := 1; i < len(events); i++ {
		require.Greater(t, events[i].ID, events[i-1].ID, "IDs grow")
	}
}
