package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/run"
)

func TestTriggerValid(t *testing.T) {
	tests := []struct {
		trigger run.Trigger
		valid   bool
	}{
		{run.TriggerCLI, true},
		{run.TriggerChat, true},
		{run.TriggerAlert, true},
		{run.TriggerSchedule, true},
		{run.TriggerPrecheck, false},
		{run.TriggerVerify, false},
		{"slack", false},
		{"", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.valid, tt.trigger.Valid(), "trigger %q", tt.trigger)
	}
	kinds := run.RecordedTriggers()
	kinds[0] = "pager"
	require.Equal(t, run.TriggerCLI, run.RecordedTriggers()[0], "RecordedTriggers returns a copy")
}

func TestOutcomeValid(t *testing.T) {
	tests := []struct {
		outcome run.Outcome
		valid   bool
	}{
		{run.OutcomeNone, true},
		{run.OutcomeOK, true},
		{run.OutcomeCritical, true},
		{run.OutcomeInconclusive, true},
		{run.OutcomeError, true},
		{"fine", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.valid, tt.outcome.Valid(), "outcome %q", tt.outcome)
	}
}
