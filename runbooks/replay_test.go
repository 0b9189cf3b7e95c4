package runbooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/replay"
)

// recordWedge runs sglang-pd-wedge at its production defaults against a
// simulated deployment with the given fault, recording what its checks
// observe, and returns the live report and the saved recording's
// directory.
func recordWedge(t *testing.T, fault string) (*runbooks.Report, string) {
	t.Helper()
	dir, inv := simDeployment(t)
	if fault != "" {
		simCtl(t, dir, "fault", fault)
	}
	rb := builtin(t, "sglang-pd-wedge")
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	rec := replay.NewRecording()
	e := &engine.Engine{
		Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}},
		Tape:    rec,
	}
	p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "sim"})
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{})
	out := filepath.Join(t.TempDir(), "rec")
	require.NoError(t, rec.Save(out, rep, replay.SaveOptions{}))
	if d := os.Getenv("RUNBOT_KEEP_RECORDING"); d != "" {
		require.NoError(t, os.CopyFS(d, os.DirFS(out)))
	}
	return rep, out
}

func builtin(tb testing.TB, name string) *runbooks.Runbook {
	tb.Helper()
	cat, problems, err := catalog.Load()
	require.NoError(tb, err)
	require.Empty(tb, problems)
	rb, err := cat.Get(name)
	require.NoError(tb, err)
	return rb
}

func replayDir(tb testing.TB, name, dir string) *runbooks.Report {
	tb.Helper()
	rec, err := replay.LoadRecording(dir)
	require.NoError(tb, err)
	rep, err := replay.Replay(tb.Context(), builtin(tb, name), rec, replay.ReplayOptions{})
	require.NoError(tb, err)
	return rep
}

// reportJSON is the report as the store keeps it.
func reportJSON(t *testing.T, rep *runbooks.Report) string {
	t.Helper()
	b, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// TestRecordReplayWedge records a real run against the wedged simulator
// and replays it: the replay gives the same report (steps, values,
// evidence, findings, diagnoses, times), and changing one recorded value
// in a raw exposition file changes the verdict.
func TestRecordReplayWedge(t *testing.T) {
	live, dir := recordWedge(t, "pd-wedge")
	require.Contains(t, diagnosisIDs(live), "pd_transfer_wedge", "the live run must see the wedge for this test to mean anything")

	got := replayDir(t, "sglang-pd-wedge", dir)
	require.Equal(t, reportJSON(t, live), reportJSON(t, got))

	// A second replay is the same again: nothing in it depends on the
	// wall clock or on chance.
	require.Equal(t, reportJSON(t, got), reportJSON(t, replayDir(t, "sglang-pd-wedge", dir)))

	// The report as the store keeps it (JSON), exported as a recording
	// of results (runbot show --export), replays to the same verdict
	// with the same evidence.
	var stored runbooks.Report
	require.NoError(t, json.Unmarshal([]byte(reportJSON(t, live)), &stored))
	exported, err := replay.ExportReport(&stored)
	require.NoError(t, err)
	exportDir := filepath.Join(t.TempDir(), "exported")
	require.NoError(t, exported.Save(exportDir, &stored, replay.SaveOptions{}))
	fromStore := replayDir(t, "sglang-pd-wedge", exportDir)
	require.Equal(t, live.Findings, fromStore.Findings)
	require.Equal(t, live.Diagnoses, fromStore.Diagnoses)
	require.Equal(t, live.Outcome, fromStore.Outcome)
	require.True(t, live.VerdictAt.Equal(fromStore.VerdictAt), "verdict at %s, replayed %s", live.VerdictAt, fromStore.VerdictAt)

	// Decode generated tokens after all: the live decode token counter,
	// flat in every scrape but rising in the last, is a decode that
	// serves. (A decode wedged before its first iteration exports no
	// series of it, so the recording gets one.)
	scrapes, err := filepath.Glob(filepath.Join(dir, "decode_output", "decode", "scrape-*.prom"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(scrapes), 3)
	for i, sc := range scrapes {
		raw, err := os.ReadFile(sc)
		require.NoError(t, err)
		raw = regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?sglang:realtime_tokens_total.*\n`).ReplaceAll(raw, nil)
		v := 100
		if i == len(scrapes)-1 {
			v = 999999
		}
		raw = fmt.Appendf(raw, "# TYPE sglang:realtime_tokens_total counter\nsglang:realtime_tokens_total{mode=\"decode\",tp_rank=\"0\"} %d\n", v)
		require.NoError(t, os.WriteFile(sc, raw, 0o644))
	}

	changed := replayDir(t, "sglang-pd-wedge", dir)
	require.NotContains(t, diagnosisIDs(changed), "pd_transfer_wedge")
	require.NotContains(t, findingIDs(changed), "prefill_parked")
	require.Contains(t, findingIDs(live), "prefill_parked")
}

// TestReplayRefusesWhatWasNotRecorded: a runbook that now runs a command
// the recording lacks gets a step error naming it, not a silent pass.
func TestReplayRefusesWhatWasNotRecorded(t *testing.T) {
	_, dir := recordWedge(t, "")
	obs := filepath.Join(dir, "backend", "decode", "observed.yaml")
	raw, err := os.ReadFile(obs)
	require.NoError(t, err)
	// Renaming the recorded command is the same as a runbook that now
	// reads something else.
	edited := strings.Replace(string(raw), "line: ", "line: echo changed; ", 1)
	require.NotEqual(t, string(raw), edited)
	require.NoError(t, os.WriteFile(obs, []byte(edited), 0o644))

	rep := replayDir(t, "sglang-pd-wedge", dir)
	var found bool
	for _, s := range rep.Steps {
		if s.Step == "backend" && s.Target == "decode" {
			found = true
			require.Contains(t, s.Error, "the recording does not have")
		}
	}
	require.True(t, found)
}

// TestLoadRecordingRefusesTypos: a hand-edited recording with a misspelt
// field is an error naming the file and line, not a field silently left
// at its zero value.
func TestLoadRecordingRefusesTypos(t *testing.T) {
	tests := []struct {
		name, file, body, want string
	}{
		{"recording.yaml", "recording.yaml", "format: 1\nrunbook: host-basics\nstarted: 2026-06-18T21:04:23Z\nparamz: {}\n", "recording.yaml: yaml: unmarshal errors:\n  line 4: field paramz not found"},
		{"observed.yaml", "disk/host/observed.yaml", "step: disk\ntarget: host\ncommands:\n  - line: df\n    exitt: 0\n", "observed.yaml: yaml: unmarshal errors:\n  line 5: field exitt not found"},
		{"a raw file outside the step", "disk/host/observed.yaml", "step: disk\ntarget: host\ncommands:\n  - line: df\n    stdout: ../../recording.yaml\n", `raw file "../../recording.yaml" must be a plain name`},
		{"another format", "recording.yaml", "format: 2\nrunbook: host-basics\n", "format 2, want 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"recording.yaml": "format: 1\nrunbook: host-basics\nstarted: 2026-06-18T21:04:23Z\n"}
			files[tc.file] = tc.body
			for name, body := range files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			}
			_, err := replay.LoadRecording(dir)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
