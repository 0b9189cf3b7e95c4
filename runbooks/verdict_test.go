package runbooks_test

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// recorder keeps the progress events of a run in order.
type recorder struct {
	mu        sync.Mutex
	events    []engine.Event
	onVerdict func()
}

func (r *recorder) progress(ev engine.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	if ev.Kind == "verdict" && r.onVerdict != nil {
		r.onVerdict()
	}
}

// kinds lists "verdict" and "finished STEP" in the order they happened.
func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		switch ev.Kind {
		case "verdict":
			out = append(out, "verdict")
		case "step_finished":
			out = append(out, "finished "+ev.Run.Step)
		}
	}
	return out
}

func (r *recorder) verdict() []runbooks.DiagnosisResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if ev.Kind == "verdict" {
			return ev.Verdict
		}
	}
	return nil
}

// The verdict comes as soon as the finished steps decide every diagnosis:
// here the fast step alone, while the slow one still waits (it waits for
// the verdict itself, so a verdict that waited for it would never come).
// It is the complete report's, and whichever way the fast step goes.
func TestVerdictSettlesBeforeTheSlowStep(t *testing.T) {
	for _, c := range []struct {
		fastSays, diagnosis string
	}{{"down", "outage"}, {"up", ""}} {
		t.Run(c.fastSays, func(t *testing.T) {
			dir := t.TempDir()
			rec := &recorder{onVerdict: func() { require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)) }}
			e := localEngine(t)
			p, err := e.Prepare(t.Context(), load(t, "verdict.yaml"), map[string]string{"host": "here", "dir": dir, "fast_says": c.fastSays})
			require.NoError(t, err)
			if c.diagnosis == "" {
				// With the fast step saying up, every diagnosis hangs on
				// the slow step: nothing settles early, so the test lets
				// the slow step go at once.
				require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
			}
			rep := e.Run(t.Context(), p, engine.RunOptions{Progress: rec.progress})

			var final []string
			for _, d := range rep.Diagnoses {
				final = append(final, d.ID)
			}
			var early []string
			for _, d := range rec.verdict() {
				early = append(early, d.ID)
			}
			require.Equal(t, final, early, "the early verdict is the complete report's")
			kinds := rec.kinds()
			if c.diagnosis != "" {
				require.Equal(t, []string{c.diagnosis}, final)
				require.Less(t, slices.Index(kinds, "verdict"), slices.Index(kinds, "finished slow"), "verdict before the slow step: %v", kinds)
				require.True(t, rep.VerdictAt.Before(rep.FinishedAt))
				require.Equal(t, "Outage: the fast step said down", rep.Diagnoses[0].Summary)
			} else {
				require.Equal(t, []string{"outage"}, final, "the slow step's finding decides")
				require.Greater(t, slices.Index(kinds, "verdict"), slices.Index(kinds, "finished slow"), "the verdict needs the slow step: %v", kinds)
			}
		})
	}
}

// A diagnosis that needs an unfinished finding, or whose summary quotes an
// unfinished step, is not settled early.
func TestVerdictWaitsForWhatItReads(t *testing.T) {
	rec := &recorder{}
	e := localEngine(t)
	p, err := e.Prepare(t.Context(), load(t, "verdict-waits.yaml"), map[string]string{"host": "here"})
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{Progress: rec.progress})
	kinds := rec.kinds()
	require.Greater(t, slices.Index(kinds, "verdict"), slices.Index(kinds, "finished slow"), "%v", kinds)
	require.Equal(t, "The slow step said late", rec.verdict()[1].Summary)
	require.Len(t, rep.Diagnoses, 2)
	require.False(t, rep.VerdictAt.After(rep.FinishedAt))
}

// Results that hold together and assert opposite facts are listed in the
// report, each pair once.
func TestContradictionsAreReported(t *testing.T) {
	rep := runbook(t, t.Context(), "contradiction.yaml", map[string]string{"host": "here"})
	require.Equal(t, []runbooks.Contradiction{
		{Fact: "app.up", Asserted: "finding up", Denied: "diagnosis broken"},
		{Fact: "app.up", Asserted: "finding up", Denied: "finding stuck"},
	}, rep.Contradictions)
	require.Equal(t, "finding up asserts app.up, diagnosis broken denies it", rep.Contradictions[0].String())

	clean := runbook(t, t.Context(), "verdict-waits.yaml", map[string]string{"host": "here"})
	require.Empty(t, clean.Contradictions)
}
