package checks

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// promSeries is one series of one scrape: a metric name, its label set
// rendered canonically, and the value.
type promSeries struct {
	Labels string
	Value  float64
}

// promMetric is every series of one metric name in one scrape.
type promMetric struct {
	Type   string // gauge, counter, untyped, histogram or summary
	Series []promSeries
}

// parsePromText reads one Prometheus text exposition into metrics by name.
// Histograms and summaries are also listed under NAME_count and NAME_sum
// (as counters), the names people write in queries; their own name carries
// the observation count. HELP text is ignored: builds that run their client
// in multiprocess mode print generic help, so only names are trusted.
func parsePromText(r io.Reader) (map[string]promMetric, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse Prometheus text: %w", err)
	}
	out := make(map[string]promMetric, len(fams))
	add := func(name, typ string, labels string, v float64) {
		m := out[name]
		m.Type = typ
		m.Series = append(m.Series, promSeries{Labels: labels, Value: v})
		out[name] = m
	}
	for name, fam := range fams {
		typ := strings.ToLower(fam.GetType().String())
		for _, m := range fam.GetMetric() {
			labels := labelString(m.GetLabel())
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				add(name, typ, labels, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, typ, labels, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				add(name, "histogram", labels, float64(h.GetSampleCount()))
				add(name+"_count", "counter", labels, float64(h.GetSampleCount()))
				add(name+"_sum", "counter", labels, h.GetSampleSum())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				add(name, "summary", labels, float64(s.GetSampleCount()))
				add(name+"_count", "counter", labels, float64(s.GetSampleCount()))
				add(name+"_sum", "counter", labels, s.GetSampleSum())
			default:
				add(name, "untyped", labels, m.GetUntyped().GetValue())
			}
		}
	}
	for name, m := range out {
		slices.SortFunc(m.Series, func(a, b promSeries) int { return strings.Compare(a.Labels, b.Labels) })
		out[name] = m
	}
	return out, nil
}

// labelString renders labels sorted by name, as Prometheus prints them:
// dp_rank="0",engine_type="decode". It is the series' identity across
// scrapes.
func labelString(pairs []*dto.LabelPair) string {
	parts := make([]string, 0, len(pairs))
	for _, lp := range pairs {
		parts = append(parts, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// isCounter says whether a metric counts up: declared a counter, or untyped
// with the _total suffix that the Prometheus client always appends.
func isCounter(typ, name string) bool {
	return typ == "counter" || (typ == "untyped" && strings.HasSuffix(name, "_total"))
}

// formatNumber prints a metric value the way a human writes it: integers
// without a fraction, others with at most three decimals.
func formatNumber(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 0):
		return fmt.Sprint(v)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	}
	s := strings.TrimRight(fmt.Sprintf("%.3f", v), "0")
	if s == "0." || s == "-0." {
		return fmt.Sprintf("%.3g", v)
	}
	return strings.TrimSuffix(s, ".")
}
