package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/web"
)

// BenchmarkTenFetchesOfAHugeRunPage measures what ten people opening the
// page of a run whose step logged 100,000 lines at once cost: the bytes
// allocated per fetch and the live heap at its peak over what it was
// before (issue 33: RSS 233 MB). It is a benchmark, not a test: under the
// race detector of `make test` the same fetches allocate twice as much and
// take minutes. Run it with `go test -run '^$' -bench TenFetches ./web`.
func BenchmarkTenFetchesOfAHugeRunPage(b *testing.B) {
	for b.Loop() {
		perFetch, peak := tenFetches(b)
		b.ReportMetric(float64(perFetch>>20), "MB-alloc/fetch")
		b.ReportMetric(float64(peak>>20), "MB-peak-heap")
	}
}

// tenFetches serves a run page of 100,000 output lines and fetches it ten
// times at once; it returns the bytes allocated per fetch and the live
// heap's peak over what it was before.
func tenFetches(tb testing.TB) (perFetch, peak uint64) {
	tb.Helper()
	st, id := storeReport(tb, bigReport(100_000))
	// The fetches that wait for their turn wait as long as it takes: the
	// test counts bytes, and a busy machine must not turn a wait into a
	// 503.
	site, err := web.New(web.Config{Logger: quiet(), Proxy: siteProxy, RequestTimeout: 10 * time.Minute}, st)
	require.NoError(tb, err)
	srv := httptest.NewServer(site)
	tb.Cleanup(srv.Close)

	runtime.GC()
	start := heapMetric(tb, "/gc/heap/allocs:bytes")
	base := heapMetric(tb, "/memory/classes/heap/objects:bytes")
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapMetric(tb, "/memory/classes/heap/objects:bytes"))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const fetches = 10
	codes := make([]int, fetches)
	sizes := make([]int64, fetches)
	var wg sync.WaitGroup
	for i := range fetches {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(tb.Context(), http.MethodGet, srv.URL+"/runs/"+id, nil)
			if err != nil {
				return
			}
			req.Header.Set("X-Forwarded-User", "oncall")
			resp, err := srv.Client().Do(req)
			if err != nil {
				return
			}
			defer func() { _ = resp.Body.Close() }()
			codes[i] = resp.StatusCode
			sizes[i], _ = io.Copy(io.Discard, resp.Body)
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	perFetch = (heapMetric(tb, "/gc/heap/allocs:bytes") - start) / fetches
	for i := range fetches {
		require.Equal(tb, http.StatusOK, codes[i], "fetch %d", i)
	}
	return perFetch, peak - min(peak, base)
}

func heapMetric(tb testing.TB, name string) uint64 {
	tb.Helper()
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		tb.Errorf("metric %s is not a count", name)
		return 0
	}
	return s[0].Value.Uint64()
}
