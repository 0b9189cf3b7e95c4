package sim

import (
	"bytes"
	"fmt"
	"sort"
)

// Bucket bounds SGLang's tokenizer histograms use (2025-26 builds).
var (
	ttftBuckets = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	e2eBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800}
)

// histogram is a cumulative Prometheus histogram without locking of its own; the
// owner's mutex guards it.
type histogram struct {
	bounds []float64
	counts []float64 // per bucket, not cumulative
	sum    float64
	count  float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]float64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.sum += v
	h.count++
	i := sort.SearchFloat64s(h.bounds, v)
	if i < len(h.counts) {
		h.counts[i]++
	}
}

// write renders the histogram in the order the Python client emits it: _sum, the
// buckets (cumulative, "le" sorted before the other labels), then _count.
func (h *histogram) write(w *bytes.Buffer, name, help, labels string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	fmt.Fprintf(w, "%s_sum{%s} %s\n", name, labels, promFloat(h.sum))
	cum := 0.0
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\",%s} %s\n", name, promFloat(b), labels, promFloat(cum))
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\",%s} %s\n", name, labels, promFloat(h.count))
	fmt.Fprintf(w, "%s_count{%s} %s\n", name, labels, promFloat(h.count))
}
