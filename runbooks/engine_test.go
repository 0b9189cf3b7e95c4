package runbooks_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
)

func load(tb testing.TB, name string) *runbooks.Runbook {
	tb.Helper()
	rb, problems, err := runbooks.LoadFile(filepath.Join("testdata", "valid", name))
	require.NoError(tb, err)
	require.Empty(tb, problems)
	return rb
}

func localEngine(tb testing.TB) *engine.Engine {
	tb.Helper()
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(tb, err)
	return &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
}

func runbook(t *testing.T, ctx context.Context, name string, params map[string]string) *runbooks.Report {
	t.Helper()
	e := localEngine(t)
	p, err := e.Prepare(ctx, load(t, name), params)
	require.NoError(t, err)
	return e.Run(ctx, p, engine.RunOptions{})
}

// TestStepsWithoutNeedsOverlap proves concurrency with a barrier both steps
// must reach at once, not with timing.
func TestStepsWithoutNeedsOverlap(t *testing.T) {
	dir := t.TempDir()
	rep := runbook(t, t.Context(), "barrier.yaml", map[string]string{"host": "here", "dir": dir})
	for _, s := range rep.Steps {
		require.Equal(t, step.OK, s.Status, "%s: %s", s.Step, s.Error)
	}
	require.Len(t, rep.Findings, 1)
	require.Equal(t, "met", rep.Findings[0].ID)
	require.Equal(t, runbooks.OutcomeOK, rep.Outcome)
}

func TestStepTimeoutIsNotAFinding(t *testing.T) {
	dir := t.TempDir()
	rep := runbook(t, t.Context(), "timeouts.yaml", map[string]string{"host": "here", "dir": dir})
	byID := map[string]*runbooks.TargetRun{}
	for _, s := range rep.Steps {
		byID[s.Step] = s
	}
	require.Equal(t, step.Timeout, byID["slow"].Status)
	require.Contains(t, byID["slow"].Error, "step slow on host@here timed out after 300ms")
	require.Equal(t, step.OK, byID["fast"].Status)
	require.Equal(t, step.Skipped, byID["dependent"].Status)
	require.Contains(t, byID["dependent"].Error, "needs slow")

	// The finding that reads the timed-out step is inconclusive, not true.
	require.Len(t, rep.Findings, 1)
	require.Equal(t, "fast_ok", rep.Findings[0].ID)
	require.Len(t, rep.Inconclusive, 1)
	require.Equal(t, "slow_output", rep.Inconclusive[0].ID)
	require.Equal(t, runbooks.OutcomeInconclusive, rep.Outcome)

	// The timed-out command was really stopped, not left running.
	pidText, err := os.ReadFile(filepath.Join(dir, "slow.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	require.NoError(t, err)
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the timed-out shell must be gone")
}

func TestCancelledRunMarksStepsCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	e := localEngine(t)
	p, err := e.Prepare(ctx, load(t, "timeouts.yaml"), map[string]string{"host": "here", "dir": dir})
	require.NoError(t, err)
	started := make(chan struct{}, 8)
	done := make(chan *runbooks.Report)
	go func() {
		done <- e.Run(ctx, p, engine.RunOptions{Progress: func(ev engine.Event) {
			if ev.Kind == "step_started" && ev.Run.Step == "slow" {
				started <- struct{}{}
			}
		}})
	}()
	<-started
	cancel()
	rep := <-done
	for _, s := range rep.Steps {
		if s.Step == "slow" {
			require.Equal(t, step.Canceled, s.Status, s.Error)
		}
	}
}

func TestPrepareRejectsBadInput(t *testing.T) {
	e := localEngine(t)
	rb := load(t, "barrier.yaml")
	cases := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"missing", map[string]string{"host": "here"}, "param dir: is required"},
		{"unknown param", map[string]string{"host": "here", "dir": "x", "dri": "y"}, `param dri: no such param (did you mean "dir"?)`},
		{"unknown host", map[string]string{"host": "nowhere", "dir": "x"}, `unknown host "nowhere"`},
		{"hostile host", map[string]string{"host": "here; rm -rf /", "dir": "x"}, "want a host name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.Prepare(t.Context(), rb, c.params)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestHostileParamsAreQuoted runs a command whose template inserts hostile
// text; the shell must print it back verbatim, never run it.
func TestHostileParamsAreQuoted(t *testing.T) {
	rb, problems := runbooks.Parse("hostile.yaml", []byte(`
name: hostile
params:
  host: {type: host, required: true}
  text: {type: string, required: true}
steps:
  - id: echo
    check: command
    target: host
    with: {cmd: 'printf %s {{ .params.text }}'}
`))
	require.Empty(t, problems)
	e := localEngine(t)
	for _, hostile := range []string{"; touch /tmp/pwned-runbot", "$(id)", "`id`", "a\nb", "it's", "\"", "☃ ü", "$HOME", "*"} {
		p, err := e.Prepare(t.Context(), rb, map[string]string{"host": "here", "text": hostile})
		require.NoError(t, err)
		rep := e.Run(t.Context(), p, engine.RunOptions{})
		require.Equal(t, step.OK, rep.Steps[0].Status)
		require.Equal(t, hostile, rep.Steps[0].Values.(checks.CommandOutput).Stdout)
	}
}

func TestRunIDsAreSortableAndUnique(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 30, 12, 0, time.UTC)
	a, b := engine.NewRunID(now), engine.NewRunID(now)
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "r-20261129-083012-"))
}

// TestNoDiagnosisIsInconclusive: a runbook with diagnoses, none of which
// holds, has not said the service is fine: the run is inconclusive and
// says why, not ok with an empty verdict. A step that ran (a command that
// exited 1 ran) is observed, so Unobserved stays false.
func TestNoDiagnosisIsInconclusive(t *testing.T) {
	for _, tc := range []struct {
		state       string // written to dir/state; "" for no file
		diagnoses   []string
		outcome     runbooks.Outcome
		undiagnosed bool
	}{
		{state: "up", diagnoses: []string{"is_up"}, outcome: runbooks.OutcomeOK},
		{state: "down", diagnoses: []string{"is_down"}, outcome: runbooks.OutcomeOK},
		{state: "degraded", outcome: runbooks.OutcomeInconclusive, undiagnosed: true},
		{state: "", outcome: runbooks.OutcomeInconclusive, undiagnosed: true},
	} {
		t.Run(tc.state, func(t *testing.T) {
			dir := t.TempDir()
			if tc.state != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "state"), []byte(tc.state+"\n"), 0o600))
			}
			rep := runbook(t, t.Context(), "undiagnosed.yaml", map[string]string{"host": "here", "dir": dir})
			var got []string
			for _, d := range rep.Diagnoses {
				got = append(got, d.ID)
			}
			require.Equal(t, tc.diagnoses, got)
			require.Equal(t, tc.outcome, rep.Outcome)
			require.Equal(t, tc.undiagnosed, rep.Undiagnosed)
			require.False(t, rep.Unobserved(), "the command ran, whatever its exit status")
		})
	}
}
