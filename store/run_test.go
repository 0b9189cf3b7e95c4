package store_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

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
	require.NotContains(t, string(b), "applied_at", "zero times are omitted")
}

// The SQLite file holds command output before redaction: a new one is
// readable by its owner only, and so are SQLite's -wal and -shm beside it.
func TestSQLiteFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runbot.db")
	s, err := store.Open(t.Context(), path)
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	_, err = s.CreateRun(t.Context(), store.Run{Runbook: "x", Trigger: store.TriggerCLI})
	require.NoError(t, err)
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
}
