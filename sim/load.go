package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// LoadConfig describes client traffic against a router (or any OpenAI endpoint).
type LoadConfig struct {
	// URL is the base URL (http://host:port) or the full chat completions URL.
	URL string
	// Rate is requests per second (open loop). Zero means closed loop: Concurrency
	// clients send back to back.
	Rate float64
	// Duration bounds the run; Requests, when positive, bounds the number sent.
	Duration time.Duration
	Requests int
	// Timeout is each request's client-side deadline; when it passes the client
	// disconnects, which the deployment sees as an abort.
	Timeout     time.Duration
	Stream      bool
	MaxTokens   int
	Concurrency int
	// IDPrefix, when set, sends X-Request-Id: <prefix>-<n> with every request.
	IDPrefix string
	Client   *http.Client
}

// LoadResult counts what the clients saw.
type LoadResult struct {
	Sent, OK, TimedOut, Errors int
	Bytes                      int64
	Latencies                  []time.Duration // of successful requests
	FirstBytes                 []time.Duration // time to first body byte, successful requests
	Elapsed                    time.Duration
}

func (c LoadConfig) chatURL() string {
	u := strings.TrimRight(c.URL, "/")
	if strings.Contains(u, "/v1/") {
		return u
	}
	return u + "/v1/chat/completions"
}

// RunLoad sends traffic as configured and returns what happened to it.
func RunLoad(ctx context.Context, c LoadConfig) LoadResult {
	if c.Client == nil {
		c.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 16
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Duration)
		defer cancel()
	}
	var (
		mu  sync.Mutex
		res LoadResult
		wg  sync.WaitGroup
	)
	start := time.Now()
	issue := func(n int) {
		defer wg.Done()
		o := c.one(n)
		mu.Lock()
		defer mu.Unlock()
		res.Bytes += o.bytes
		switch {
		case o.ok:
			res.OK++
			res.Latencies = append(res.Latencies, o.total)
			res.FirstBytes = append(res.FirstBytes, o.firstByte)
		case o.timedOut:
			res.TimedOut++
		default:
			res.Errors++
		}
	}
	sent := 0
	more := func() bool { return ctx.Err() == nil && (c.Requests <= 0 || sent < c.Requests) }
	if c.Rate > 0 {
		tick := time.NewTicker(time.Duration(float64(time.Second) / c.Rate))
		defer tick.Stop()
		for more() {
			sent++
			wg.Add(1)
			go issue(sent)
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	} else {
		slots := make(chan struct{}, c.Concurrency)
		for more() {
			select {
			case <-ctx.Done():
				continue
			case slots <- struct{}{}:
			}
			sent++
			wg.Add(1)
			go func(n int) { defer func() { <-slots }(); issue(n) }(sent)
		}
	}
	wg.Wait()
	res.Sent = sent
	res.Elapsed = time.Since(start)
	return res
}

type loadOutcome struct {
	ok, timedOut     bool
	bytes            int64
	firstByte, total time.Duration
}

// one sends a single request with its own deadline, independent of the run's.
func (c LoadConfig) one(n int) loadOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"model":      "default",
		"messages":   []any{map[string]any{"role": "user", "content": "Say something about prefill and decode."}},
		"max_tokens": c.MaxTokens,
		"stream":     c.Stream,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.chatURL(), bytes.NewReader(body))
	if err != nil {
		return loadOutcome{}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.IDPrefix != "" {
		req.Header.Set("X-Request-Id", fmt.Sprintf("%s-%d", c.IDPrefix, n))
	}
	start := time.Now()
	resp, err := c.Client.Do(req)
	if err != nil {
		return loadOutcome{timedOut: errors.Is(err, context.DeadlineExceeded)}
	}
	defer func() { _ = resp.Body.Close() }() // reads report what went wrong
	var o loadOutcome
	buf := make([]byte, 4096)
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 && o.bytes == 0 {
			o.firstByte = time.Since(start)
		}
		o.bytes += int64(k)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			o.timedOut = errors.Is(rerr, context.DeadlineExceeded) || ctx.Err() != nil
			return o
		}
	}
	o.total = time.Since(start)
	o.ok = resp.StatusCode == http.StatusOK
	return o
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// Summary renders the one-line report `sglang-sim load` prints.
func (r LoadResult) Summary() string {
	rps := 0.0
	if r.Elapsed > 0 {
		rps = float64(r.OK) / r.Elapsed.Seconds()
	}
	return fmt.Sprintf("sent=%d ok=%d timed_out=%d errors=%d bytes=%d ok_per_s=%.1f p50=%s p99=%s ttfb_p50=%s",
		r.Sent, r.OK, r.TimedOut, r.Errors, r.Bytes, rps,
		percentile(r.Latencies, 0.5).Round(time.Millisecond), percentile(r.Latencies, 0.99).Round(time.Millisecond),
		percentile(r.FirstBytes, 0.5).Round(time.Millisecond))
}

// runLoadCommand implements `sglang-sim load`.
func runLoadCommand(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var c LoadConfig
	fs.Float64Var(&c.Rate, "rate", 1, "requests per second (0: closed loop with --concurrency clients)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to send")
	fs.IntVar(&c.Requests, "requests", 0, "stop after this many requests (0: no limit)")
	fs.DurationVar(&c.Timeout, "timeout", 35*time.Second, "client timeout per request; expiry disconnects (an abort)")
	fs.BoolVar(&c.Stream, "stream", false, "request SSE streaming")
	fs.IntVar(&c.MaxTokens, "max-tokens", 16, "max_tokens per request")
	fs.IntVar(&c.Concurrency, "concurrency", 8, "clients in closed-loop mode")
	fs.StringVar(&c.IDPrefix, "id-prefix", "", "send X-Request-Id: PREFIX-N")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: sglang-sim load [--rate R] [--duration D] [--timeout T] [--stream] URL")
	}
	c.URL = fs.Arg(0)
	res := RunLoad(ctx, c)
	_, err := fmt.Fprintln(stdout, res.Summary())
	return err
}

// parseInterspersed parses flags that may follow positional arguments, as in
// `sglang-sim load URL --rate 5`.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return fs.Parse(pos)
}
