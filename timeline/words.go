package timeline

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/step"
)

// metricNames says what SGLang's gauges and counters mean, in the words an
// on-call engineer uses.
var metricNames = map[string]string{
	"sglang:num_running_reqs":                 "running requests",
	"sglang:num_queue_reqs":                   "queued requests",
	"sglang:num_prefill_inflight_queue_reqs":  "prefilled, waiting for KV transfer",
	"sglang:num_prefill_prealloc_queue_reqs":  "waiting for decode to reserve KV",
	"sglang:num_prefill_bootstrap_queue_reqs": "waiting for decode to reserve KV",
	"sglang:num_decode_transfer_queue_reqs":   "KV transfers in progress",
	"sglang:num_decode_prealloc_queue_reqs":   "waiting for KV space",
	"sglang:gen_throughput":                   "generation tokens/s",
	"sglang:generation_tokens_total":          "tokens of finished requests (total)",
	"sglang:realtime_tokens_total":            "tokens generated (live total)",
	"sglang:num_transfer_failed_reqs_total":   "failed KV transfers (total)",
	"sglang:num_bootstrap_failed_reqs_total":  "failed bootstraps (total)",
	"sglang:token_usage":                      "KV cache usage",
	"sglang:cache_hit_rate":                   "prefix cache hit rate",
	"sglang:num_retracted_reqs":               "retracted requests",
	"sglang:num_paused_reqs":                  "paused requests",
	"sglang:num_grammar_queue_reqs":           "waiting for grammar",
}

func metricWords(metric string) string {
	if w, ok := metricNames[metric]; ok {
		return w
	}
	name := metric
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	return strings.ReplaceAll(name, "_", " ")
}

// probeLabel says what a probe got, e.g. "health: 200 OK in 12ms" or
// "chat: no answer, gave up after 35s".
func probeLabel(w Window) string {
	took := duration(w.End.Sub(w.Start))
	var what string
	switch w.Outcome {
	case step.ProbeOK:
		what = fmt.Sprintf("%d %s in %s", w.Status, http.StatusText(w.Status), took)
	case step.ProbeBadStatus:
		what = fmt.Sprintf("HTTP %d %s after %s", w.Status, http.StatusText(w.Status), took)
	case step.ProbeTimeout:
		switch w.Phase {
		case "connect":
			what = "could not connect, gave up after " + took
		case "body":
			what = "answer stopped midway, gave up after " + took
		default:
			if w.Status != 0 {
				what = fmt.Sprintf("HTTP %d, then no data; gave up after %s", w.Status, took)
			} else {
				what = "no answer, gave up after " + took
			}
		}
	case step.ProbeRefused:
		what = "connection refused"
	case step.ProbeError:
		what = "failed after " + took
	default:
		what = w.Outcome + " after " + took
	}
	return w.Step + ": " + what
}

// duration writes a duration the way people say it: 12ms, 6.9s, 35s,
// 12m40s, 2h5m.
func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + duration(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		s := d.Round(100 * time.Millisecond).Seconds()
		return strings.TrimSuffix(fmt.Sprintf("%.1f", s), ".0") + "s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	default:
		d = d.Round(time.Minute)
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%02dm", h, m)
	}
}

// clock writes a wall time in UTC with the zone shown.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") + " UTC" }

// lastProgressLabel is the words next to the last-progress line, e.g.
// "last Decode batch 20:38:03 UTC — 12m40s ago".
func lastProgressLabel(l *Lane) string {
	// Written as the report writes the age (step.AgeText), so the picture
	// and the text beside it say the same.
	return fmt.Sprintf("last %s %s — %s", l.Progress, clock(l.Last), step.AgeText(l.Last.Add(l.Age()), l.Last))
}
