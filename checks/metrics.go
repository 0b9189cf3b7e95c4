package checks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
)

// MetricsSampleOutput is what the metrics_sample check exposes to
// expressions.
type MetricsSampleOutput struct {
	Metrics   map[string]MetricSummary `expr:"metrics" json:"metrics" doc:"one summary per requested metric, keyed by every name it was requested under (each alias of a|b is a key); a metric that was never seen is present with verdict missing"`
	Samples   int                      `expr:"samples" json:"samples" doc:"scrapes attempted"`
	SamplesOK int                      `expr:"samples_ok" json:"samples_ok" doc:"scrapes that returned a parseable exposition"`
	Reachable bool                     `expr:"reachable" json:"reachable" doc:"at least one scrape succeeded"`
	Errors    int                      `expr:"errors" json:"errors" doc:"scrapes that failed"`
	LastError string                   `expr:"last_error" json:"last_error" doc:"why the last failed scrape failed"`
	Span      time.Duration            `expr:"span" json:"span" doc:"time from the first to the last successful scrape"`
	URL       string                   `expr:"url" json:"url" doc:"the URL scraped"`
}

// MetricSummary aggregates one metric over all its series and samples.
type MetricSummary struct {
	Name    string  `expr:"name" json:"name" doc:"the name found in the exposition (one of the requested aliases); empty when missing"`
	Type    string  `expr:"type" json:"type" doc:"gauge, counter, untyped, histogram or summary, as the exposition declares it"`
	Verdict string  `expr:"verdict" json:"verdict" doc:"constant, changing, stale-looking, missing or single-sample (see the check's doc)"`
	Samples int     `expr:"samples" json:"samples" doc:"successful scrapes that contained the metric"`
	Series  int     `expr:"series" json:"series" doc:"distinct label sets seen"`
	Last    float64 `expr:"last" json:"last" doc:"sum over series of each series' last value"`
	First   float64 `expr:"first" json:"first" doc:"sum over series of each series' first value"`
	Min     float64 `expr:"min" json:"min" doc:"smallest value of any series in any sample"`
	Max     float64 `expr:"max" json:"max" doc:"largest value of any series in any sample"`
	Changed bool    `expr:"changed" json:"changed" doc:"some series' value changed between samples"`
	// Increase and Rate count counter resets the way Prometheus does: a
	// drop means the process restarted and counted again from zero.
	Increase float64 `expr:"increase" json:"increase" doc:"counters: total increase over the sampling span, summed over series; 0 for gauges"`
	Rate     float64 `expr:"rate" json:"rate" doc:"counters: increase per second, summed over series; 0 for gauges"`
	// LastKnown marks a gauge that did not change while sampled, over a
	// span shorter than the engine's gauge_refresh: it shows what the
	// engine last wrote, which may be long ago, so it proves nothing.
	LastKnown bool `expr:"last_known" json:"last_known" doc:"a gauge that stayed constant over a span shorter than gauge_refresh: a last-known value, not a live reading"`
	// Values has one entry per successful scrape that contained the metric.
	Values    []float64                `expr:"values" json:"values" doc:"per sample, the sum over series"`
	PerSeries map[string]SeriesSummary `expr:"per_series" json:"per_series" doc:"the same figures per series, keyed by its labels as Prometheus prints them"`
}

// SeriesSummary is one series of a metric over the samples.
type SeriesSummary struct {
	Samples  int     `expr:"samples" json:"samples" doc:"samples that contained the series"`
	First    float64 `expr:"first" json:"first" doc:"first value"`
	Last     float64 `expr:"last" json:"last" doc:"last value"`
	Min      float64 `expr:"min" json:"min" doc:"smallest value"`
	Max      float64 `expr:"max" json:"max" doc:"largest value"`
	Changed  bool    `expr:"changed" json:"changed" doc:"the value changed between samples"`
	Increase float64 `expr:"increase" json:"increase" doc:"counters: increase over the span"`
	Rate     float64 `expr:"rate" json:"rate" doc:"counters: increase per second"`
}

// Metric verdicts, the values of MetricSummary.Verdict.
const (
	VerdictConstant     = "constant"
	VerdictChanging     = "changing"
	VerdictStaleLooking = "stale-looking"
	VerdictMissing      = "missing"
	VerdictSingleSample = "single-sample"
)

// Event kinds metrics_sample records; internal/step says what each carries.
const (
	EventSample      = step.EventSample
	EventScrapeError = step.EventScrapeError
)

var metricsSampleType = Type{
	Spec: argspec.Spec{
		Name: "metrics_sample",
		Doc: "Scrapes a Prometheus endpoint several times and says, per metric, whether it is constant, changing, " +
			"stale-looking (an unchanging fractional gauge, i.e. a measurement last written before sampling began), " +
			"missing or seen in a single sample only; counters also get a rate. One sample is never treated as a reading.",
		Args: []argspec.Arg{
			{Name: "metrics", Type: argspec.StringList, Required: true, Doc: "metric names; a|b lists aliases of one metric across versions (the first one present is used); name{label=\"value\"} keeps only the series with those labels"},
			{Name: "samples", Type: argspec.Int, Default: 5, Min: 1, Doc: "number of scrapes"},
			{Name: "interval", Type: argspec.Duration, Default: 2 * time.Second, Positive: true, Doc: "pause between scrapes"},
			{Name: "url", Type: argspec.String, Escape: argspec.EscapeURL, Doc: "endpoint to scrape; defaults to the target's metrics URL"},
			{Name: "via", Type: argspec.String, Default: "target", Enum: []string{"target", "bot"}, Doc: "target dials from the target's host (through its SSH connection); bot dials from where runbot runs"},
			{Name: "scrape_timeout", Type: argspec.Duration, Default: 5 * time.Second, Positive: true, Doc: "deadline for each scrape"},
			{Name: "gauge_refresh", Type: argspec.Duration, Default: time.Duration(0), Doc: "how far apart, at most, the engine rewrites its gauges when nothing happens (SGLang: 30 s, otherwise only at a batch or log interval); a gauge constant over a shorter span is reported as a last-known value. 0: gauges are live"},
		},
		Outputs: reflect.TypeFor[MetricsSampleOutput](),
	},
	Check:   MetricsSample{},
	Timeout: 2 * time.Minute,
}

// MetricsSample is the metrics_sample check.
type MetricsSample struct{}

// Plan implements Check.
func (MetricsSample) Plan(env Env) []string {
	args := metricsSampleType.Spec.WithDefaults(env.Args)
	u := args.String("url")
	if u == "" {
		u = env.Target.MetricsURL
	}
	if u == "" {
		return []string{"metrics_sample: the target has no metrics URL in the inventory and the step sets no url"}
	}
	return []string{fmt.Sprintf("GET %s %d times, %s apart, and compare %s",
		u, args.Int("samples"), args.Duration("interval"), strings.Join(args.List("metrics"), ", "))}
}

// Run implements Check.
func (MetricsSample) Run(ctx context.Context, env Env) (step.Result, error) {
	args := metricsSampleType.Spec.WithDefaults(env.Args)
	u := args.String("url")
	if u == "" {
		u = env.Target.MetricsURL
	}
	if u == "" {
		return step.Result{}, fmt.Errorf("sample metrics of %s: the target has no metrics URL in the inventory and the step sets no url", env.Target.Name())
	}
	dial, err := probeDialer(ctx, env, args.String("via"))
	if err != nil {
		return step.Result{}, err
	}
	n := max(args.Int("samples"), 1)
	s := sampler{url: u, dial: dial, timeout: args.Duration("scrape_timeout"), now: clock(env)}
	scrapes := make([]scrape, 0, n)
	for i := range n {
		if i > 0 {
			if err := wait(ctx, env, args.Duration("interval")); err != nil {
				return step.Result{}, fmt.Errorf("sample metrics of %s: stopped after %d of %d scrapes: %w", env.Target.Name(), i, n, err)
			}
		}
		var raw Scrape
		if env.Tape != nil {
			if raw, err = env.Tape.Scrape(ctx, u, func() Scrape { return s.fetch(ctx) }); err != nil {
				return step.Result{}, fmt.Errorf("sample metrics of %s: scrape %d of %d: %w", env.Target.Name(), i+1, n, err)
			}
		} else {
			raw = s.fetch(ctx)
		}
		if ctx.Err() != nil {
			return step.Result{}, fmt.Errorf("sample metrics of %s: stopped during scrape %d of %d: %w", env.Target.Name(), i+1, n, context.Cause(ctx))
		}
		scrapes = append(scrapes, parseScrape(raw))
	}
	o := summarizeScrapes(u, args.List("metrics"), scrapes)
	if refresh := args.Duration("gauge_refresh"); refresh > 0 && o.Span < refresh {
		for k, m := range o.Metrics {
			if !isCounter(m.Type, m.Name) && !m.Changed && m.Samples > 0 {
				m.LastKnown = true
				o.Metrics[k] = m
			}
		}
	}
	ev := metricsEvidence(o, args.List("metrics"))
	if refresh := args.Duration("gauge_refresh"); refresh > 0 && slices.ContainsFunc(slices.Collect(maps.Values(o.Metrics)), func(m MetricSummary) bool { return m.LastKnown }) {
		ev = append(ev, fmt.Sprintf("gauges marked last-known stayed constant over %s, less than the %s within which the engine rewrites them: they show what it last wrote, not the present", round(o.Span), refresh))
	}
	return step.Result{Values: o, Evidence: ev, Events: scrapeEvents(o, scrapes)}, nil
}

// scrape is one attempt to read the exposition.
type scrape struct {
	Time    time.Time
	Err     string
	Metrics map[string]promMetric
}

func (s scrape) ok() bool { return s.Err == "" }

type sampler struct {
	url     string
	dial    dialFunc
	timeout time.Duration
	now     func() time.Time
}

// fetch reads the exposition once, without parsing it. Failures are part
// of the observation.
func (s sampler) fetch(parent context.Context) Scrape {
	sc := Scrape{Time: s.now()}
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	// A fresh connection per scrape: an idle kept-alive connection would
	// hold a reader goroutine across the pause between scrapes, and a
	// scrape should measure the endpoint as a new client sees it.
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		DialContext:       func(ctx context.Context, network, addr string) (net.Conn, error) { return s.dial(ctx, network, addr) },
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		sc.Err = fmt.Sprintf("build request: %v", err)
		return sc
	}
	// Ask for the classic text format; OpenMetrics would need another parser.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		sc.Err = unwrapURLError(err).Error()
		return sc
	}
	defer func() { _ = resp.Body.Close() }() // the body's reads report any failure; the close has nothing to add
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		sc.Err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, oneLine(string(b), 120))
		return sc
	}
	if sc.Body, err = io.ReadAll(resp.Body); err != nil {
		sc.Err = fmt.Sprintf("read exposition: %v", err)
		sc.Body = nil
	}
	return sc
}

// parseScrape parses a raw scrape's exposition; a body that does not
// parse makes the scrape a failed one, as it always was.
func parseScrape(raw Scrape) scrape {
	sc := scrape{Time: raw.Time, Err: raw.Err}
	if sc.Err != "" {
		return sc
	}
	m, err := parsePromText(bytes.NewReader(raw.Body))
	if err != nil {
		sc.Err = err.Error()
		return sc
	}
	sc.Metrics = m
	return sc
}

// summarizeScrapes turns the scrapes into the check's output.
func summarizeScrapes(u string, requested []string, scrapes []scrape) MetricsSampleOutput {
	o := MetricsSampleOutput{Metrics: map[string]MetricSummary{}, Samples: len(scrapes), URL: u}
	var first, last time.Time
	for _, sc := range scrapes {
		if !sc.ok() {
			o.Errors++
			o.LastError = sc.Err
			continue
		}
		if o.SamplesOK == 0 {
			first = sc.Time
		}
		last = sc.Time
		o.SamplesOK++
	}
	o.Reachable = o.SamplesOK > 0
	o.Span = last.Sub(first)
	for _, req := range requested {
		selectSeries(aliases(req), scrapes)
	}
	for _, req := range requested {
		sum := summarizeMetric(aliases(req), scrapes)
		for _, name := range aliases(req) {
			o.Metrics[name] = sum
		}
	}
	return o
}

// aliases splits "a|b" into its names.
func aliases(req string) []string {
	var names []string
	for n := range strings.SplitSeq(req, "|") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// summarizeMetric aggregates the first alias present in any scrape.
func summarizeMetric(names []string, scrapes []scrape) MetricSummary {
	name := ""
	for _, n := range names {
		if slices.ContainsFunc(scrapes, func(sc scrape) bool { _, ok := sc.Metrics[n]; return ok }) {
			name = n
			break
		}
	}
	if name == "" {
		return MetricSummary{Verdict: VerdictMissing, PerSeries: map[string]SeriesSummary{}}
	}
	sum := MetricSummary{Name: name, PerSeries: map[string]SeriesSummary{}, Min: math.Inf(1), Max: math.Inf(-1)}
	counter := false
	type point struct {
		t time.Time
		v float64
	}
	points := map[string][]point{}
	var order []string
	for _, sc := range scrapes {
		m, ok := sc.Metrics[name]
		if !ok {
			continue
		}
		sum.Type = m.Type
		counter = isCounter(m.Type, name)
		sum.Samples++
		total := 0.0
		for _, s := range m.Series {
			if _, seen := points[s.Labels]; !seen {
				order = append(order, s.Labels)
			}
			points[s.Labels] = append(points[s.Labels], point{sc.Time, s.Value})
			total += s.Value
			sum.Min, sum.Max = math.Min(sum.Min, s.Value), math.Max(sum.Max, s.Value)
		}
		sum.Values = append(sum.Values, total)
	}
	if math.IsInf(sum.Min, 1) {
		sum.Min, sum.Max = 0, 0 // the metric was declared but had no series
	}
	sum.Series = len(order)
	stale := false
	for _, labels := range order {
		ps := points[labels]
		ss := SeriesSummary{Samples: len(ps), First: ps[0].v, Last: ps[len(ps)-1].v, Min: ps[0].v, Max: ps[0].v}
		for i, p := range ps {
			ss.Min, ss.Max = math.Min(ss.Min, p.v), math.Max(ss.Max, p.v)
			if p.v != ps[0].v {
				ss.Changed = true
			}
			if counter && i > 0 {
				if d := p.v - ps[i-1].v; d >= 0 {
					ss.Increase += d
				} else {
					ss.Increase += p.v // reset: the counter started again from zero
				}
			}
		}
		if span := ps[len(ps)-1].t.Sub(ps[0].t); counter && span > 0 {
			ss.Rate = ss.Increase / span.Seconds()
		}
		if !ss.Changed && len(ps) > 1 && !counter && ss.Last != math.Trunc(ss.Last) {
			stale = true
		}
		sum.PerSeries[labels] = ss
		sum.First += ss.First
		sum.Last += ss.Last
		sum.Changed = sum.Changed || ss.Changed
		sum.Increase += ss.Increase
		sum.Rate += ss.Rate
	}
	switch {
	case sum.Samples == 1:
		sum.Verdict = VerdictSingleSample
	case sum.Changed:
		sum.Verdict = VerdictChanging
	case stale:
		// A live measurement such as a throughput or a usage fraction is
		// never identical to the last digit twice; one that is was last
		// written before sampling began (SGLang only writes its gauges
		// when a batch runs or on an idle refresh).
		sum.Verdict = VerdictStaleLooking
	default:
		sum.Verdict = VerdictConstant
	}
	return sum
}

// metricsEvidence writes one line per requested metric, plus one for
// failed scrapes.
func metricsEvidence(o MetricsSampleOutput, requested []string) []string {
	var ev []string
	if o.Errors > 0 {
		ev = append(ev, fmt.Sprintf("%d of %d scrapes of %s failed; last: %s", o.Errors, o.Samples, o.URL, o.LastError))
	}
	if !o.Reachable {
		return ev
	}
	over := fmt.Sprintf("%d samples over %s", o.SamplesOK, round(o.Span))
	for _, req := range requested {
		names := aliases(req)
		if len(names) == 0 {
			continue
		}
		m := o.Metrics[names[0]]
		name := m.Name
		switch m.Verdict {
		case VerdictMissing:
			ev = append(ev, fmt.Sprintf("%s: not exported in any of %d samples", strings.Join(names, " / "), o.SamplesOK))
			continue
		case VerdictSingleSample:
			why := "the step took only 1 sample"
			if o.Samples > 1 {
				why = fmt.Sprintf("%d of %d samples lacked it or failed", o.Samples-1, o.Samples)
			}
			ev = append(ev, fmt.Sprintf("%s = %s%s in 1 sample only, not a reading (%s)", name, formatNumber(m.Last), seriesNote(m), why))
			continue
		}
		counter := isCounter(m.Type, name)
		var line string
		switch {
		case counter && m.Changed:
			line = fmt.Sprintf("%s: +%s over %s (%s/s), now %s", name, formatNumber(m.Increase), round(o.Span), formatNumber(m.Rate), formatNumber(m.Last))
		case counter:
			line = fmt.Sprintf("%s: flat at %s, no increase", name, formatNumber(m.Last))
		case m.Verdict == VerdictChanging:
			line = fmt.Sprintf("%s: %s%s (changing; max %s)", name, sequence(m.Values), seriesNote(m), formatNumber(m.Max))
		case m.Verdict == VerdictStaleLooking:
			line = fmt.Sprintf("%s = %s%s in every sample, identical to the last digit: looks stale (last written before sampling)", name, formatNumber(m.Last), seriesNote(m))
		case m.LastKnown:
			line = fmt.Sprintf("%s = %s%s in every sample (last known, not live)", name, formatNumber(m.Last), seriesNote(m))
		default:
			line = fmt.Sprintf("%s = %s%s in every sample (constant)", name, formatNumber(m.Last), seriesNote(m))
		}
		if m.Samples < o.SamplesOK {
			line += fmt.Sprintf("; present in %d of %d samples", m.Samples, o.SamplesOK)
		}
		ev = append(ev, line+", "+over)
	}
	return ev
}

// seriesNote says that a value is a sum, when it is.
func seriesNote(m MetricSummary) string {
	if m.Series > 1 {
		return fmt.Sprintf(" (sum of %d series)", m.Series)
	}
	return ""
}

func sequence(vs []float64) string {
	parts := make([]string, 0, len(vs))
	for i, v := range vs {
		if i == 8 && len(vs) > 9 {
			parts = append(parts, "…", formatNumber(vs[len(vs)-1]))
			break
		}
		parts = append(parts, formatNumber(v))
	}
	return strings.Join(parts, " → ")
}

// scrapeEvents records every sampled value of the requested metrics and
// every failed scrape, for the timeline.
func scrapeEvents(o MetricsSampleOutput, scrapes []scrape) []step.Event {
	var names []string
	for _, m := range o.Metrics {
		if m.Name != "" && !slices.Contains(names, m.Name) {
			names = append(names, m.Name)
		}
	}
	slices.Sort(names)
	var evs []step.Event
	for _, sc := range scrapes {
		if !sc.ok() {
			evs = append(evs, step.Event{Kind: EventScrapeError, Time: sc.Time, Text: sc.Err})
			continue
		}
		for _, name := range names {
			for _, s := range sc.Metrics[name].Series {
				evs = append(evs, step.Event{Kind: EventSample, Time: sc.Time, Value: s.Value,
					Labels: map[string]string{"metric": name, "series": s.Labels}})
			}
		}
	}
	return evs
}
