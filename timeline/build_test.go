package timeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// The recorded wedge, as a chart: a lane per engine, decode stalled since
// its last batch line, the burst and the users' timed-out requests as
// unexplained aborts, our chat probe's own abort as its echo, both probes
// as windows, and the counters summed over their series.
func TestFromReportWedge(t *testing.T) {
	rep := loadReport(t, "wedge.json")
	c, err := FromReport(rep, Options{})
	require.NoError(t, err)

	require.Equal(t, "sglang-pd-wedge — PD transfer wedge", c.Title)
	require.Contains(t, c.Subtitle, rep.RunID)
	require.Equal(t, rep.FinishedAt.Add(15*time.Second).UTC(), c.End)

	require.Len(t, c.Lanes, 2)
	decode, prefill := c.Lanes[0], c.Lanes[1]
	require.Equal(t, []string{"decode", "prefill"}, []string{decode.Name, prefill.Name})
	require.Equal(t, "Decode batch", decode.Progress)
	require.Equal(t, "Prefill batch", prefill.Progress)

	require.True(t, decode.Stalled)
	require.Equal(t, time.Date(2026, 11, 29, 9, 25, 20, 0, time.UTC), decode.Last.UTC())
	require.Less(t, c.End.Sub(c.Start), DefaultWindow, "the axis is trimmed to what the run saw")
	require.True(t, c.Start.Before(decode.Last.Add(-time.Minute)), "a minute at least of decode's batches before its last one and the burst")
	require.Equal(t, "5m11s", duration(decode.Gap()))
	require.Equal(t, "last Decode batch 09:25:20 UTC — 5m11s ago", lastProgressLabel(decode))
	require.Equal(t, rep.FinishedAt, decode.AgesAt, "the picture counts ages to the run's end, as the report does")
	ended := *decode
	ended.AgesAt = ended.Last.Add(6 * time.Minute)
	require.Equal(t, "last Decode batch 09:25:20 UTC — 6m0s ago", lastProgressLabel(&ended), "the age is to the run's end, not to the lane's read")
	logged := *decode
	logged.Last = logged.Measured.Add(568 * time.Millisecond) // logged while the check read
	require.Equal(t, "last Decode batch 09:30:31 UTC — 0s ago", lastProgressLabel(&logged), "a line logged during the read is not in the future")
	require.False(t, prefill.Stalled, "prefill still ran a batch for our probe")
	require.Len(t, decode.Rate, 16, "a bucket per minute of the log's window")

	chatID := stepValues(t, rep, "chat")["request_id"]
	var echoes, unexplained []Mark
	for _, m := range decode.Marks {
		require.Equal(t, "aborts", m.Pattern)
		if m.Echo() {
			echoes = append(echoes, m)
		} else {
			unexplained = append(unexplained, m)
		}
	}
	require.Len(t, echoes, 1, "our chat probe's timeout echoed once")
	require.Equal(t, chatID, echoes[0].RequestID)
	require.Len(t, unexplained, 13, "8 in the wedging burst, then one per timed-out user request")
	for _, m := range unexplained[:8] {
		require.Equal(t, decode.Last, m.Time, "the burst came with the last batch line")
	}
	for _, m := range prefill.Marks {
		require.False(t, m.Echo())
	}

	require.Len(t, c.Probes, 2)
	health, chat := c.Probes[0], c.Probes[1]
	require.Equal(t, "health", health.Step)
	require.True(t, health.OK())
	require.Equal(t, 200, health.Status)
	require.Regexp(t, `^health: 200 OK in \d+ms$`, health.Label)
	require.Equal(t, "chat", chat.Step)
	require.False(t, chat.OK())
	require.Equal(t, chatID, chat.RequestID)
	require.Equal(t, "chat: no answer, gave up after 35s", chat.Label)
	require.WithinDuration(t, chat.Start.Add(35*time.Second), chat.End, time.Second)

	running := counterOf(t, c, "decode", "sglang:num_running_reqs")
	require.Len(t, running.Points, 5)
	require.Equal(t, 4, running.Series, "one series per decode rank, summed")
	inflight := counterOf(t, c, "prefill", "sglang:num_prefill_inflight_queue_reqs")
	for _, p := range inflight.Points {
		require.Equal(t, 1.0, p.Value, "prefill holds our request in every sample")
	}

	rows := pickCounters(c.Counters, 4)
	require.Len(t, rows, 2)
	require.Equal(t, []string{"sglang:num_running_reqs", "sglang:num_prefill_inflight_queue_reqs", "sglang:num_queue_reqs", "sglang:num_prefill_prealloc_queue_reqs"}, metricsOf(rows[0]))
	require.Equal(t, []string{"sglang:num_running_reqs", "sglang:num_decode_transfer_queue_reqs", "sglang:num_decode_prealloc_queue_reqs", "sglang:num_queue_reqs"}, metricsOf(rows[1]))
}

func stepValues(t *testing.T, rep *runbooks.Report, id string) map[string]any {
	t.Helper()
	runs := rep.StepRuns(id)
	require.Len(t, runs, 1)
	v, ok := runs[0].Values.(map[string]any)
	require.True(t, ok, "values of %s: %T", id, runs[0].Values)
	return v
}

func counterOf(t *testing.T, c *Chart, target, metric string) *Counter {
	t.Helper()
	for _, x := range c.Counters {
		if x.Target == target && x.Metric == metric {
			return x
		}
	}
	t.Fatalf("no counter %s on %s", metric, target)
	return nil
}

func metricsOf(cs []*Counter) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Metric)
	}
	return out
}

func TestFromReportEdges(t *testing.T) {
	finished := time.Date(2026, 6, 18, 20, 44, 48, 0, time.UTC)
	probe := step.Event{Kind: step.EventProbe, Time: finished.Add(-40 * time.Second), End: finished.Add(-5 * time.Second),
		Labels: map[string]string{"outcome": "timeout", "phase": "first_byte", "status": "0", "request_id": "rb-1"}}
	logRun := func(id, target string, evs ...step.Event) *runbooks.TargetRun {
		return &runbooks.TargetRun{Step: id, Target: target, StartedAt: finished.Add(-time.Second), Events: evs}
	}
	rep := func(steps ...*runbooks.TargetRun) *runbooks.Report {
		return &runbooks.Report{RunID: "r-1", Runbook: "rb", StartedAt: finished.Add(-time.Minute), FinishedAt: finished, Steps: steps}
	}

	t.Run("nil report", func(t *testing.T) {
		_, err := FromReport(nil, Options{})
		require.Error(t, err)
	})
	t.Run("nothing recorded", func(t *testing.T) {
		_, err := FromReport(rep(&runbooks.TargetRun{Step: "units", Target: "decode"}), Options{})
		require.ErrorIs(t, err, ErrNothingToDraw, "%v", err)
	})
	t.Run("window and end", func(t *testing.T) {
		c, err := FromReport(rep(&runbooks.TargetRun{Step: "chat", Target: "router", Events: []step.Event{probe}}),
			Options{Window: 5 * time.Minute, End: finished.Add(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, finished.Add(-4*time.Minute), c.Start)
		require.Equal(t, finished.Add(time.Minute), c.End)
		require.Empty(t, c.Lanes)
		require.Equal(t, "chat: no answer, gave up after 35s", c.Probes[0].Label)
	})
	t.Run("markers after the run widen the chart", func(t *testing.T) {
		restart := finished.Add(3 * time.Minute)
		c, err := FromReport(rep(&runbooks.TargetRun{Step: "chat", Target: "router", Events: []step.Event{probe}}),
			Options{Markers: []Marker{{Time: restart, Label: "verify"}, {Time: finished.Add(time.Minute), Label: "systemd_restart decode"}}})
		require.NoError(t, err)
		require.Equal(t, restart.Add(DefaultWindow/60), c.End)
		require.Equal(t, []string{"systemd_restart decode", "verify"}, []string{c.Markers[0].Label, c.Markers[1].Label}, "oldest first")
	})
	t.Run("lanes of one target are told apart by step", func(t *testing.T) {
		c, err := FromReport(rep(
			logRun("batches", "decode", step.Event{Kind: step.EventProgress, Time: finished.Add(-time.Minute), Text: "Decode batch, #running-req: 1"}),
			logRun("transfers", "decode", step.Event{Kind: step.EventLogMatch, Time: finished, Labels: map[string]string{"pattern": "aborts"}}),
		), Options{})
		require.NoError(t, err)
		require.Equal(t, "decode · batches", c.Lanes[0].Name)
		require.Equal(t, "decode · transfers", c.Lanes[1].Name)
		require.Equal(t, "progress", c.Lanes[1].Progress, "no progress line seen")
		require.Equal(t, Unexplained, c.Lanes[1].Marks[0].Attribution, "a line without attribution is not an echo")
	})
	t.Run("two reads of one log make one lane, the later deciding", func(t *testing.T) {
		pl := map[string]string{"progress": "Decode batch"}
		abort := step.Event{Kind: step.EventLogMatch, Time: finished.Add(-30 * time.Second), Text: "Decode transfer failed",
			Labels: map[string]string{"pattern": "aborts", "attribution": "unexplained", "progress": "Decode batch"}}
		early := logRun("decode_early", "decode",
			step.Event{Kind: step.EventProgress, Time: finished.Add(-50 * time.Second), Text: "Decode batch, #running-req: 1", Labels: pl}, abort)
		early.StartedAt = finished.Add(-40 * time.Second)
		late := logRun("last_batch", "decode",
			step.Event{Kind: step.EventProgress, Time: finished.Add(-50 * time.Second), Text: "Decode batch, #running-req: 1", Labels: pl},
			step.Event{Kind: step.EventStall, Time: finished.Add(-50 * time.Second), End: finished, Labels: pl}, abort)
		// The later read comes first in the report; it still decides.
		c, err := FromReport(rep(late, early), Options{})
		require.NoError(t, err)
		require.Len(t, c.Lanes, 1)
		require.Equal(t, "last_batch", c.Lanes[0].Step)
		require.True(t, c.Lanes[0].Stalled, "the later read saw the stall")
		require.Len(t, c.Lanes[0].Marks, 1, "a line both reads saw is one mark")
	})
	t.Run("series summed per sample", func(t *testing.T) {
		s := func(at time.Time, series string, v float64) step.Event {
			return step.Event{Kind: step.EventSample, Time: at, Value: v, Labels: map[string]string{"metric": "sglang:num_running_reqs", "series": series}}
		}
		t1, t2 := finished.Add(-3*time.Second), finished.Add(-time.Second)
		c, err := FromReport(rep(&runbooks.TargetRun{Step: "counters", Target: "decode", Events: []step.Event{
			s(t1, "dp0", 1), s(t1, "dp1", 2), s(t2, "dp0", 0), s(t2, "dp1", 0),
		}}), Options{})
		require.NoError(t, err)
		require.Len(t, c.Counters, 1)
		require.Equal(t, "running requests", c.Counters[0].Label)
		require.Equal(t, 2, c.Counters[0].Series)
		require.Equal(t, []Point{{Time: t1, Value: 3}, {Time: t2, Value: 0}}, c.Counters[0].Points)
	})
}

func TestProgressName(t *testing.T) {
	for line, want := range map[string]string{
		"[2026-06-18 20:38:03 DP0 TP0] Decode batch, #running-req: 12, #token: 3000": "Decode batch",
		"[2026-06-18 20:38:03 TP0] Prefill batch, #new-seq: 1":                       "Prefill batch",
		"processed job 42":     "processed job 42",
		"worker heartbeat: ok": "worker heartbeat",
		"a very long progress line without any punctuation at all": "a very long progress line witho…",
	} {
		require.Equal(t, want, progressName(line), line)
	}
}

func TestApplyMarkers(t *testing.T) {
	at0 := time.Date(2026, 6, 18, 20, 50, 0, 0, time.UTC)
	res := &remediation.ApplyResult{
		Recovered: true,
		Actions: []store.ActionRecord{
			{Action: "systemd_restart", Target: "decode", StartedAt: at0.Add(20 * time.Second)},
			{Action: "config_edit", Target: "prefill", StartedAt: at0},
			{Action: "systemd_restart", Target: "prefill"}, // never started
		},
		Verify: &runbooks.Report{StartedAt: at0.Add(2 * time.Minute)},
	}
	require.Equal(t, []Marker{
		{Time: at0, Label: "config_edit prefill"},
		{Time: at0.Add(20 * time.Second), Label: "systemd_restart decode"},
		{Time: at0.Add(2 * time.Minute), Label: "verify: serving again"},
	}, ApplyMarkers(res))
	res.Recovered = false
	require.Equal(t, "verify: still failing", ApplyMarkers(res)[2].Label)
	require.Empty(t, ApplyMarkers(nil))
}
