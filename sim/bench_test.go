package sim_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/runbot/runbot/sim"
)

// BenchmarkRouterThroughput measures completed chat completions per second through
// the router (router -> prefill -> KV transfer -> decode) with short completions and
// a fast token rate. Every request must succeed: a drop fails the benchmark.
func BenchmarkRouterThroughput(b *testing.B) {
	d := up(b, "--token-rate", "1000", "--decode-log-interval", "40", "--idle-refresh", "1s")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	warm := sim.RunLoad(context.Background(), sim.LoadConfig{
		URL: d.endpoints["router"], Requests: 64, Concurrency: 32, Timeout: 10 * time.Second, MaxTokens: 2, Client: client,
	})
	if warm.OK != 64 {
		b.Fatalf("warm-up: %s", warm.Summary())
	}
	b.ResetTimer()
	res := sim.RunLoad(context.Background(), sim.LoadConfig{
		URL: d.endpoints["router"], Requests: b.N, Concurrency: 48, Timeout: 10 * time.Second, MaxTokens: 2, Client: client,
	})
	b.StopTimer()
	if res.OK != b.N {
		b.Fatalf("dropped requests: %s", res.Summary())
	}
	b.ReportMetric(float64(res.OK)/res.Elapsed.Seconds(), "req/s")
}
