package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunShippedExample runs the shipped host-basics runbook against this
// machine, as the README shows, in both output formats.
func TestRunShippedExample(t *testing.T) {
	runbot, _ := buildBinaries(t)
	store := t.TempDir() + "/runbot.db"
	args := []string{"run", "host-basics", "-i", "testdata/local.yaml", "-p", "host=here", "--store", store}

	out, err := exec.Command(runbot, append(args, "--format", "json")...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		require.Contains(t, []int{exitCritical, exitInconclusive}, ee.ExitCode(), "a full disk or the like is a finding, not a failure")
	} else {
		require.NoError(t, err)
	}
	var doc struct {
		RunID      string            `json:"run_id"`
		Runbook    string            `json:"runbook"`
		Params     map[string]string `json:"params"`
		StartedAt  time.Time         `json:"started_at"`
		FinishedAt time.Time         `json:"finished_at"`
		Steps      []struct {
			ID         string         `json:"id"`
			Target     string         `json:"target"`
			Status     string         `json:"status"`
			DurationMS *int64         `json:"duration_ms"`
			Values     map[string]any `json:"values"`
		} `json:"steps"`
		Findings  []map[string]any `json:"findings"`
		Diagnoses []map[string]any `json:"diagnoses"`
	}
	require.NoError(t, json.Unmarshal(out, &doc), string(out))
	require.True(t, strings.HasPrefix(doc.RunID, "r-"))
	require.Equal(t, "host-basics", doc.Runbook)
	require.Equal(t, map[string]string{"host": "here", "disk_full_pct": "90"}, doc.Params)
	require.False(t, doc.FinishedAt.Before(doc.StartedAt))
	require.Len(t, doc.Steps, 3)
	for _, s := range doc.Steps {
		require.Equal(t, "ok", s.Status, s.ID)
		require.Equal(t, "host", s.Target)
		require.NotNil(t, s.DurationMS)
		require.Contains(t, s.Values, "exit_code")
	}
	require.NotNil(t, doc.Findings)
	require.NotEmpty(t, doc.Diagnoses)

	text, _ := exec.Command(runbot, args...).Output()
	for _, want := range []string{"host-basics", "Steps", "disk", "memory", "load", "Outcome:"} {
		require.Contains(t, string(text), want)
	}
	hist, err := exec.Command(runbot, "history", "--store", store).Output()
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(hist), "host-basics"), "both runs are recorded:\n%s", hist)
}
