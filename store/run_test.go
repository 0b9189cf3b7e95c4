package store_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

func TestRunLifecycle(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
	r := mkRun(t, s)
	require.Regexp(t, regexp.MustCompile(`^r-20261129-083012-[0-9a-f]{6}$`), r.ID)
	require.Equal(t, store.RunRunning, r.Status)
	require.Equal(t, c.Now(), r.StartedAt)

	require.NoError(t, s.SetRunReport(ctx, r.ID, json.RawMessage(`{"steps":[{"id":"health","status":"ok"}]}`)))
	require.NoError(t, s.SetRunMessage(ctx, r.ID, store.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}))

	c.Advance(42 * time.Second)
	done, err := s.FinishRun(ctx, r.ID, store.RunFinished, store.OutcomeCritical, nil)
	require.NoError(t, err)
	require.Equal(t, store.RunFinished, done.Status)
	require.Equal(t, store.OutcomeCritical, done.Outcome)
	require.Equal(t, c.Now(), done.FinishedAt)
	require.JSONEq(t, `{"steps":[{"id":"health","status":"ok"}]}`, string(done.Report), "a nil report keeps the last one")
	require.Equal(t, &store.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}, done.Message)

	got, err := s.GetRun(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, done, got)

	_, err = s.FinishRun(ctx, r.ID, store.RunFailed, store.OutcomeError, nil)
	var conflict *store.StateConflictError
	require.ErrorAs(t, err, &conflict, "a run ends once")
	require.Equal(t, string(store.RunFinished), conflict.Got)
	require.Error(t, s.SetRunReport(ctx, r.ID, json.RawMessage(`{}`)), "a finished run's report is final")

	require.Equal(t, []string{store.AuditRunCreated, store.AuditRunFinished}, auditKinds(t, s, store.AuditFilter{RunID: r.ID}))
}

func TestFinishRunRefusesBadInput(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	r := mkRun(t, s)
	_, err := s.FinishRun(ctx, r.ID, store.RunRunning, store.OutcomeOK, nil)
	var invalid *store.InvalidTransitionError
	require.ErrorAs(t, err, &invalid)
	_, err = s.FinishRun(ctx, r.ID, store.RunFinished, "great", nil)
	require.Error(t, err)
	_, err = s.FinishRun(ctx, r.ID, store.RunFinished, store.OutcomeOK, json.RawMessage(`{"steps":`))
	require.Error(t, err)
	_, err = s.FinishRun(ctx, "r-missing", store.RunFinished, store.OutcomeOK, nil)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.CreateRun(ctx, store.Run{Runbook: "x", Trigger: "pager"})
	require.Error(t, err)
}

func TestGetRunByPrefix(t *testing.T) {
	s, _ := openTest(t)
	ctx := testCtx(t)
	for _, id := range []string{"r-20261129-083012-ab12cd", "r-20261129-083012-ab99ff", "r-20261129-090000-000001"} {
		_, err := s.CreateRun(ctx, store.Run{ID: id, Runbook: "sglang-pd-wedge", Trigger: store.TriggerCLI})
		require.NoError(t, err)
	}
	got, err := s.GetRun(ctx, "r-20261129-0900")
	require.NoError(t, err)
	require.Equal(t, "r-20261129-090000-000001", got.ID)
	got, err = s.GetRun(ctx, "r-20261129-083012-ab12")
	require.NoError(t, err)
	require.Equal(t, "r-20261129-083012-ab12cd", got.ID)

	_, err = s.GetRun(ctx, "r-20261129-083012-ab")
	var ambiguous *store.AmbiguousIDError
	require.ErrorAs(t, err, &ambiguous)
	require.Equal(t, []string{"r-20261129-083012-ab12cd", "r-20261129-083012-ab99ff"}, ambiguous.Matches)

	_, err = s.GetRun(ctx, "r-2027")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.GetRun(ctx, "r-%")
	require.Error(t, err, "IDs and prefixes hold no pattern characters")
}

func TestListRunsFilters(t *testing.T) {
	s, c := openTest(t)
	ctx := testCtx(t)
	mk := func(runbook string, trig store.Trigger) string {
		r, err := s.CreateRun(ctx, store.Run{Runbook: runbook, Trigger: trig})
		require.NoError(t, err)
		c.Advance(time.Minute)
		return r.ID
	}
	a := mk("sglang-pd-wedge", store.TriggerAlert)
	b := mk("disk-audit", store.TriggerSchedule)
	since := c.Now()
	d := mk("sglang-pd-wedge", store.TriggerSlack)
	e := mk("sglang-pd-wedge", store.TriggerAlert)

	for name, tc := range map[string]struct {
		f    store.RunFilter
		want []string
	}{
		"all, newest first": {store.RunFilter{}, []string{e, d, b, a}},
		"runbook":           {store.RunFilter{Runbook: "sglang-pd-wedge"}, []string{e, d, a}},
		"trigger":           {store.RunFilter{Trigger: store.TriggerAlert}, []string{e, a}},
		"since":             {store.RunFilter{Since: since}, []string{e, d}},
		"limit":             {store.RunFilter{Limit: 1}, []string{e}},
		"combined":          {store.RunFilter{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert, Since: since}, []string{e}},
		"status":            {store.RunFilter{Status: store.RunFinished}, nil},
	} {
		runs, err := s.ListRuns(ctx, tc.f)
		require.NoError(t, err, name)
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		require.Equal(t, tc.want, ids, name)
	}
}

// The record types are what the bot and `runbot history --json` print, so
// their JSON field names are part of the contract.
func TestRecordJSON(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 30, 12, 0, time.UTC)
	run := store.Run{ID: "r-1", Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert, RequestedBy: "alertmanager",
		Params: map[string]string{"deployment": "dsv4"}, Status: store.RunFinished, Outcome: store.OutcomeCritical,
		StartedAt: at, FinishedAt: at.Add(time.Minute), Report: json.RawMessage(`{"findings":[]}`),
		Message: &store.MessageRef{Platform: "slack", Channel: "C1", ID: "1.2"}}
	b, err := json.Marshal(run)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"r-1","runbook":"sglang-pd-wedge","trigger":"alert","requested_by":"alertmanager",
		"params":{"deployment":"dsv4"},"status":"finished","outcome":"critical","started_at":"2026-11-29T08:30:12Z",
		"finished_at":"2026-11-29T08:31:12Z","report":{"findings":[]},
		"message":{"platform":"slack","channel":"C1","id":"1.2"}}`, string(b))

	plan := store.Plan{ID: "p-1", RunID: "r-1", Remediation: "restart", Deployment: "dsv4", Hash: "h",
		Body: json.RawMessage(`{"actions":[]}`), RequestedBy: "U1", State: store.PlanProposed, CreatedAt: at, UpdatedAt: at,
		Policy: store.Policy{Approvers: []string{"sre"}, TwoPerson: true, ExpiresAt: at.Add(15 * time.Minute)}}
	b, err = json.Marshal(plan)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"p-1","run_id":"r-1","remediation":"restart","deployment":"dsv4","hash":"h",
		"plan":{"actions":[]},"requested_by":"U1","state":"proposed","created_at":"2026-11-29T08:30:12Z",
		"updated_at":"2026-11-29T08:30:12Z",
		"policy":{"approvers":["sre"],"two_person":true,"expires_at":"2026-11-29T08:45:12Z"}}`, string(b))
	require.False(t, strings.Contains(string(b), "applied_at"), "zero times are omitted")
}
