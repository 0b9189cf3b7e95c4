package web_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// bigReport is a finished wedge-like run with evidence lines lines of
// decode log in one step, cited in full by its finding, with the log as
// the step's raw output and a progress event per line (the timeline).
func bigReport(lines int) *runbooks.Report {
	t0 := time.Date(2026, 6, 18, 20, 44, 12, 0, time.UTC)
	var ev []string
	var events []step.Event
	var raw strings.Builder
	for i := range lines {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		l := fmt.Sprintf("[%s] Decode batch. #running-req: %d, #token: %d, token usage: 0.%02d, gen throughput (token/s): %d.00, #queue-req: 0, password=hunter%d", at.Format("2006-01-02 15:04:05.000"), i%64, 4096+i, i%100, 1000+i, i)
		ev = append(ev, "[last_batch@decode] "+l)
		raw.WriteString(l + "\n")
		events = append(events, step.Event{Kind: step.EventProgress, Time: at, Text: l})
	}
	tr := &runbooks.TargetRun{Step: "last_batch", Check: "log_progress", Target: "decode", Host: "gpu-2", Status: step.OK, StartedAt: t0,
		Duration: 1200 * time.Millisecond, DurationMS: 1200, Values: map[string]any{"stdout": raw.String(), "lines": lines}, Evidence: ev, Events: events}
	return &runbooks.Report{RunID: "r-bench", Runbook: "sglang-pd-wedge", Title: "SGLang PD decode wedge", Params: map[string]string{"deployment": "dsv4"},
		StartedAt: t0, VerdictAt: t0.Add(9 * time.Second), FinishedAt: t0.Add(36 * time.Second), Outcome: runbooks.OutcomeCritical,
		Steps:     []*runbooks.TargetRun{tr},
		Findings:  []runbooks.FindingResult{{ID: "decode_stalled", Severity: runbooks.Critical, Summary: "decode logged no batch for 14m", Evidence: ev}},
		Diagnoses: []runbooks.DiagnosisResult{{ID: "pd_transfer_wedge", Severity: runbooks.Critical, Summary: "Decode stopped batching", Findings: []string{"decode_stalled"}}},
	}
}

// BenchmarkRunPage renders the page of a stored run with 1,000 evidence
// lines, server-side, through the site's handler over a real SQLite
// store: the store read, the redaction, the postmortem draft and the
// template. It reports the time to encode the same report as JSON,
// measured in the same run, the ratio of the two (x-json), and the CPU
// time per page (cpu-ns/op, all of the process's threads). The target is
// under 50 ms a page: make bench runs it.
func BenchmarkRunPage(b *testing.B) {
	rep := bigReport(1000)
	site, id := benchSite(b, rep)
	get := func() string {
		req := httptest.NewRequest("GET", "/runs/"+id, nil)
		req.Header.Set("X-Forwarded-User", "bench")
		w := httptest.NewRecorder()
		site.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	page := get()
	// Every line is on the page four times (the finding's evidence, the
	// step's evidence, its raw output and its events), a dozen are quoted
	// in the postmortem draft, and all are redacted.
	require.Equal(b, 4*1000+12, strings.Count(page, "Decode batch. #running-req"))
	require.NotContains(b, page, "hunter1")
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for b.Loop() {
		get()
	}
	pageTime, pageCPU := time.Since(start), cpuTime()-cpu
	n := b.N
	b.StopTimer()
	// The same report encoded as JSON, as many times, in the same run.
	jstart := time.Now()
	for range n {
		if _, err := json.Marshal(rep); err != nil {
			b.Fatal(err)
		}
	}
	jsonTime := time.Since(jstart)
	b.ReportMetric(float64(jsonTime.Nanoseconds())/float64(n), "json-ns/op")
	b.ReportMetric(float64(pageTime)/float64(jsonTime), "x-json")
	b.ReportMetric(float64(len(page)), "page-bytes")
	b.ReportMetric(float64(pageCPU.Nanoseconds())/float64(n), "cpu-ns/op")
}

// benchSite stores rep as a finished run in a real SQLite store and
// returns a site over it, for a proxy user from 192.0.2.0/24 (as
// httptest.NewRequest sends) or the loopback, with the run's id.
func benchSite(tb testing.TB, rep *runbooks.Report) (*web.Site, string) {
	tb.Helper()
	st, id := storeReport(tb, rep)
	return siteOver(tb, st), id
}

// storeReport stores rep as a finished run in a new SQLite store.
func storeReport(tb testing.TB, rep *runbooks.Report) (*store.SQLite, string) {
	tb.Helper()
	st, err := store.Open(tb.Context(), filepath.Join(tb.TempDir(), "runbot.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	run, err := st.CreateRun(tb.Context(), store.Run{Runbook: rep.Runbook, Trigger: store.TriggerAlert, RequestedBy: "alertmanager", Params: rep.Params, StartedAt: rep.StartedAt})
	require.NoError(tb, err)
	rep.RunID = run.ID
	raw, err := json.Marshal(rep)
	require.NoError(tb, err)
	_, err = st.FinishRun(tb.Context(), run.ID, store.RunFinished, store.OutcomeCritical, raw)
	require.NoError(tb, err)
	return st, run.ID
}

// siteProxy trusts the user header from httptest.NewRequest's address
// and from the loopback (an httptest.Server's client).
var siteProxy = &web.ProxyTrust{Header: "X-Forwarded-User",
	From: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("127.0.0.1/32")}}

func siteOver(tb testing.TB, st web.Store) *web.Site {
	tb.Helper()
	site, err := web.New(web.Config{Logger: quiet(), Proxy: siteProxy}, st)
	require.NoError(tb, err)
	return site
}

// BenchmarkRunPageLarge renders the page of a run whose one step logged
// 100,000 lines, the size that left the daemon's RSS at 233 MB after ten
// concurrent fetches (issue 33): bytes/op is what one fetch allocates.
func BenchmarkRunPageLarge(b *testing.B) {
	site, id := benchSite(b, bigReport(100_000))
	var size int
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/runs/"+id, nil)
		req.Header.Set("X-Forwarded-User", "bench")
		w := httptest.NewRecorder()
		site.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %.500s", w.Code, w.Body.String())
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// cpuTime is the CPU time this process used so far: on a shared machine
// the wall time per page says as much about the neighbours as the page.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
