package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

var runTests = []test{
	{"Lifecycle", testRunLifecycle},
	{"FinishRefusesBadInput", testFinishRunRefusesBadInput},
	{"GetByPrefix", testGetRunByPrefix},
	{"ListFilters", testListRunsFilters},
	{"ListByRequesterAndParams", testListRunsByRequesterAndParams},
	{"TriggerKinds", testTriggerKinds},
	{"TimesAreExact", testRunTimesAreExact},
}

func testRunLifecycle(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	r := CreateRun(t, s)
	require.Regexp(t, `^r-20261129-083012-[0-9a-f]{6}$`, r.ID)
	require.Equal(t, store.RunRunning, r.Status)
	require.Equal(t, c.Now(), r.StartedAt)
	require.Equal(t, MainOwner, r.Owner)

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

	require.Equal(t, []string{store.AuditRunCreated, store.AuditRunFinished}, AuditKinds(t, s, store.AuditFilter{RunID: r.ID}))
}

func testFinishRunRefusesBadInput(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	r := CreateRun(t, s)
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
	_, err = s.CreateRun(ctx, store.Run{Trigger: store.TriggerCLI})
	require.Error(t, err, "a runbook is required")
	_, err = s.CreateRun(ctx, store.Run{Runbook: "x", Trigger: store.TriggerCLI, Report: json.RawMessage(`{`)})
	require.Error(t, err, "a report is JSON")
}

func testGetRunByPrefix(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
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

func testListRunsFilters(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	mk := func(runbook string, trig store.Trigger) string {
		r, err := s.CreateRun(ctx, store.Run{Runbook: runbook, Trigger: trig})
		require.NoError(t, err)
		c.Advance(time.Minute)
		return r.ID
	}
	a := mk("sglang-pd-wedge", store.TriggerAlert)
	b := mk("disk-audit", store.TriggerSchedule)
	since := c.Now()
	d := mk("sglang-pd-wedge", store.TriggerChat)
	f := mk("sglang-pd-wedge", store.TriggerAlert)

	for name, tc := range map[string]struct {
		f    store.RunFilter
		want []string
	}{
		"all, newest first": {store.RunFilter{}, []string{f, d, b, a}},
		"runbook":           {store.RunFilter{Runbook: "sglang-pd-wedge"}, []string{f, d, a}},
		"trigger":           {store.RunFilter{Trigger: store.TriggerAlert}, []string{f, a}},
		"since":             {store.RunFilter{Since: since}, []string{f, d}},
		"limit":             {store.RunFilter{Limit: 1}, []string{f}},
		"combined":          {store.RunFilter{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert, Since: since}, []string{f}},
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
	_, err := s.FinishRun(ctx, b, store.RunFinished, store.OutcomeOK, nil)
	require.NoError(t, err)
	runs, err := s.ListRuns(ctx, store.RunFilter{Status: store.RunFinished})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, b, runs[0].ID)
}

// Every kind in store.TriggerKinds is accepted for runs and work, and kept;
// nothing else is.
func testTriggerKinds(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	kinds := store.TriggerKinds()
	require.NotEmpty(t, kinds)
	for _, k := range kinds {
		require.True(t, k.Valid(), k)
		r, err := s.CreateRun(ctx, store.Run{Runbook: "host-basics", Trigger: k})
		require.NoError(t, err, k)
		runs, err := s.ListRuns(ctx, store.RunFilter{Trigger: k})
		require.NoError(t, err, k)
		require.Len(t, runs, 1, k)
		require.Equal(t, r.ID, runs[0].ID)
		require.Equal(t, k, runs[0].Trigger)

		w, created, err := s.Enqueue(ctx, store.Work{Runbook: "host-basics", Trigger: k})
		require.NoError(t, err, k)
		require.True(t, created)
		got, err := s.GetWork(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, k, got.Trigger)
	}
	for _, k := range []store.Trigger{"", "pager", "Slack", "cron"} {
		require.False(t, k.Valid(), k)
		_, err := s.CreateRun(ctx, store.Run{Runbook: "host-basics", Trigger: k})
		require.Error(t, err, "run triggered by %q", k)
		_, _, err = s.Enqueue(ctx, store.Work{Runbook: "host-basics", Trigger: k})
		require.Error(t, err, "work triggered by %q", k)
	}
}

var messageTests = []test{
	{"SetAndRead", testMessageSetAndRead},
	{"Validates", testMessageValidates},
}

// Where a chat front end posted a run is kept with the run, on whatever
// platform, and read back by every lookup; it may be recorded or replaced
// after the run finished (a scheduled audit posts its result).
func testMessageSetAndRead(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	quiet := CreateRun(t, s)
	require.Nil(t, quiet.Message, "a run nobody posted has no message")

	posted, err := s.CreateRun(ctx, store.Run{Runbook: "host-basics", Trigger: store.TriggerChat,
		Message: &store.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}})
	require.NoError(t, err)
	require.Equal(t, &store.MessageRef{Platform: "slack", Channel: "C1", ID: "1700000000.000100"}, posted.Message)
	got, err := s.GetRun(ctx, posted.ID)
	require.NoError(t, err)
	require.Equal(t, posted.Message, got.Message)

	ref := store.MessageRef{Platform: "recording", Channel: "#ops", ID: "m-7"}
	require.NoError(t, s.SetRunMessage(ctx, quiet.ID, ref))
	got, err = s.GetRun(ctx, quiet.ID)
	require.NoError(t, err)
	require.Equal(t, &ref, got.Message)

	_, err = s.FinishRun(ctx, quiet.ID, store.RunFinished, store.OutcomeOK, nil)
	require.NoError(t, err)
	moved := store.MessageRef{Platform: "recording", Channel: "#ops", ID: "m-8"}
	require.NoError(t, s.SetRunMessage(ctx, quiet.ID, moved), "a finished run's message may still be recorded")

	runs, err := s.ListRuns(ctx, store.RunFilter{})
	require.NoError(t, err)
	byID := map[string]*store.MessageRef{}
	for _, r := range runs {
		byID[r.ID] = r.Message
	}
	require.Equal(t, map[string]*store.MessageRef{quiet.ID: &moved, posted.ID: posted.Message}, byID)
}

func testMessageValidates(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	r := CreateRun(t, s)
	for name, ref := range map[string]store.MessageRef{
		"no platform": {Channel: "C1", ID: "1.2"},
		"no id":       {Platform: "slack", Channel: "C1"},
	} {
		require.Error(t, s.SetRunMessage(ctx, r.ID, ref), name)
		_, err := s.CreateRun(ctx, store.Run{Runbook: "host-basics", Trigger: store.TriggerChat, Message: &ref})
		require.Error(t, err, name)
	}
	got, err := s.GetRun(ctx, r.ID)
	require.NoError(t, err)
	require.Nil(t, got.Message, "a refused reference changes nothing")
	require.ErrorIs(t, s.SetRunMessage(ctx, "r-missing", store.MessageRef{Platform: "slack", Channel: "C1", ID: "1.2"}), store.ErrNotFound)
}

// A fleet schedule finds one deployment's previous run among its runs of
// every deployment: by requester (the schedule's name) and by param.
func testListRunsByRequesterAndParams(t *testing.T, e *Env) {
	s, c, ctx := e.S, e.Clock, t.Context()
	mk := func(by string, params map[string]string) string {
		r, err := s.CreateRun(ctx, store.Run{Runbook: "app-check", Trigger: store.TriggerSchedule, RequestedBy: by, Params: params})
		require.NoError(t, err)
		c.Advance(time.Minute)
		return r.ID
	}
	a1 := mk("fleet", map[string]string{"deployment": "web-a", "marker": "ok"})
	b1 := mk("fleet", map[string]string{"deployment": "web-b", "marker": "ok"})
	other := mk("nightly", map[string]string{"deployment": "web-a", "marker": "ok"})
	a2 := mk("fleet", map[string]string{"deployment": "web-a", "marker": "up"})
	dotted := mk("fleet", map[string]string{"a.b": "x", "deployment": "web-b"})

	for name, tc := range map[string]struct {
		f    store.RunFilter
		want []string
	}{
		"requester":              {store.RunFilter{RequestedBy: "fleet"}, []string{dotted, a2, b1, a1}},
		"param":                  {store.RunFilter{Params: map[string]string{"deployment": "web-a"}}, []string{a2, other, a1}},
		"requester and param":    {store.RunFilter{RequestedBy: "fleet", Params: map[string]string{"deployment": "web-a"}}, []string{a2, a1}},
		"every param must match": {store.RunFilter{Params: map[string]string{"deployment": "web-a", "marker": "ok"}}, []string{other, a1}},
		"no such value":          {store.RunFilter{Params: map[string]string{"deployment": "web-c"}}, nil},
		"no such param":          {store.RunFilter{Params: map[string]string{"region": "eu"}}, nil},
		"a dot is part of a key": {store.RunFilter{Params: map[string]string{"a.b": "x"}}, []string{dotted}},
		"newest one":             {store.RunFilter{RequestedBy: "fleet", Params: map[string]string{"deployment": "web-b"}, Limit: 1}, []string{dotted}},
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

// Record times keep their nanoseconds, and Since filters at exactly them:
// a run started at t is listed for Since t and not for Since t+1ns, on
// every backend alike.
func testRunTimesAreExact(t *testing.T, e *Env) {
	s, ctx := e.S, t.Context()
	at := Epoch.Add(123456789 * time.Nanosecond)
	r, err := s.CreateRun(ctx, store.Run{Runbook: "host-basics", Trigger: store.TriggerCLI, StartedAt: at})
	require.NoError(t, err)
	got, err := s.GetRun(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, at, got.StartedAt)
	for since, want := range map[time.Time]int{at: 1, at.Add(time.Nanosecond): 0, at.Add(-time.Nanosecond): 1} {
		runs, err := s.ListRuns(ctx, store.RunFilter{Since: since})
		require.NoError(t, err)
		require.Len(t, runs, want, "since %s", since.Format(time.RFC3339Nano))
	}
	events, err := s.Audit(ctx, store.AuditFilter{Since: Epoch.Add(time.Nanosecond)})
	require.NoError(t, err)
	require.Empty(t, events, "the run was audited at the clock's time, Epoch")
}
