// Command alerts-bench is bench/alerts/run.sh: it wires runbot's alert
// intake the way `runbot serve` does (slackchat.New, dispatch.New, alerts.New, the SQLite
// store, the runbook engine) against the fake Slack of slackchat/slackrec,
// serves the webhook on a loopback port, and POSTs N Alertmanager
// notifications for D distinct alerts from S concurrent senders. It
// prints how fast notifications were acknowledged and checks that exactly
// one run started per distinct alert and that none was dropped.
//
//	go run ./bench/alerts -n 10000 -d 1000 -s 8
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runbot/runbot/alerts"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

const token = "bench-bearer-token"

func main() {
	if len(os.Args) == 2 && os.Args[1] == fakeSlackArg {
		serveFakeSlack()
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "alerts-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	n, d, senders, maxQueue, runs int
	retry, timeout, update        time.Duration
	dir                           string
}

func run() error {
	var o options
	flag.IntVar(&o.n, "n", 10000, "notifications to send")
	flag.IntVar(&o.d, "d", 1000, "distinct alerts (fingerprints) among them")
	flag.IntVar(&o.senders, "s", 8, "concurrent senders")
	flag.IntVar(&o.maxQueue, "max-queue", 256, "alert runs queued or running before 503")
	flag.IntVar(&o.runs, "runs", 8, "runs at once (the dispatcher's bound)")
	flag.DurationVar(&o.retry, "retry", 20*time.Millisecond, "wait before delivering a 503'd notification again")
	flag.DurationVar(&o.update, "update-interval", 100*time.Millisecond, "least time between two updates of one Slack message (Slack allows about 1s)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "deadline for the whole benchmark")
	flag.StringVar(&o.dir, "dir", "bench/alerts", "directory with runbooks/ and inventory.yaml")
	flag.Parse()
	if o.d <= 0 || o.n < o.d {
		return errors.New("need 0 < d <= n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	tmp, err := os.MkdirTemp("", "alerts-bench-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// The fake Slack keeps every call it is sent, tens of MiB in a storm:
	// it runs in a process of its own (this program again) so that the
	// memory figures are runbot's and the senders', not the recorder's.
	slackURL, stopSlack, err := startFakeSlack(ctx)
	if err != nil {
		return err
	}
	defer stopSlack()
	st, err := store.Open(ctx, filepath.Join(tmp, "runbot.db"))
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	alerts, b, err := wire(o, tmp, slackURL, st)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = alerts.Run(runCtx) }()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: alerts.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()

	idleHeap := liveHeap()
	mem := sampleHeap(ctx)
	res, err := send(ctx, o, "http://"+l.Addr().String()+"/alerts/alertmanager")
	if err != nil {
		return err
	}
	ingested := time.Now()
	started, dropped, err := waitRuns(ctx, o, st, alerts)
	if err != nil {
		return err
	}
	drained := time.Since(ingested)
	peakHeap := mem()
	runtime.GC()
	afterHeap := liveHeap()
	stop()
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if err := b.Shutdown(sctx); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(alerts)
	deduped := metric(reg, "runbot_alerts_deduplicated_total")
	slices.Sort(res.latencies)
	fmt.Printf("notifications        %d (%d distinct alerts, %d senders, max queue %d, %d runs at once, update interval %s)\n",
		o.n, o.d, o.senders, o.maxQueue, o.runs, o.update)
	fmt.Printf("acknowledged 2xx     %d in %s: %.0f accepted/s\n", len(res.latencies), res.elapsed.Round(time.Millisecond), float64(len(res.latencies))/res.elapsed.Seconds())
	fmt.Printf("ack latency (2xx)    p50 %s  p99 %s  max %s\n", pct(res.latencies, 50), pct(res.latencies, 99), pct(res.latencies, 100))
	fmt.Printf("503 queue full       %d (each delivered again after %s)\n", res.full, o.retry)
	fmt.Printf("repeats deduplicated %.0f\n", deduped)
	fmt.Printf("runs started         %d (distinct alerts %d)\n", started, o.d)
	fmt.Printf("alerts dropped       %d\n", dropped)
	fmt.Printf("all runs done        %s after the last acknowledgement\n", drained.Round(time.Millisecond))
	fmt.Printf("heap in use          %.1f MiB wired and idle, at most %.1f MiB during the storm (%.0f×), %.1f MiB after it once collected\n",
		mib(idleHeap), mib(peakHeap), float64(peakHeap)/float64(idleHeap), mib(afterHeap))
	fmt.Printf("peak RSS             %s (runbot's intake, dispatcher, store and runs, and the senders; the fake Slack is another process)\n", peakRSS())
	if started != o.d || dropped != 0 || len(res.latencies) != o.n {
		return fmt.Errorf("FAILED: %d runs for %d alerts, %d dropped, %d of %d acknowledged", started, o.d, dropped, len(res.latencies), o.n)
	}
	return nil
}

// wire builds Slack, the dispatcher and the alert intake as the serve
// command does.
func wire(o options, tmp, slackURL string, st store.Store) (*alerts.Receiver, *dispatch.Dispatcher, error) {
	secret := func(name, value string) (slackchat.SecretRef, error) {
		p := filepath.Join(tmp, name)
		return slackchat.SecretRef{File: p}, os.WriteFile(p, []byte(value), 0o600)
	}
	botToken, err := secret("bot-token", "xoxb-bench")
	if err != nil {
		return nil, nil, err
	}
	signing, err := secret("signing", "bench-signing-secret")
	if err != nil {
		return nil, nil, err
	}
	bearer, err := secret("bearer", token)
	if err != nil {
		return nil, nil, err
	}
	cat, problems, err := catalog.Load(filepath.Join(o.dir, "runbooks"))
	if err != nil {
		return nil, nil, err
	}
	if len(problems) > 0 {
		return nil, nil, fmt.Errorf("bench runbooks: %v", problems)
	}
	inv, err := inventory.Load(filepath.Join(o.dir, "inventory.yaml"))
	if err != nil {
		return nil, nil, err
	}
	engine := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sl, err := slackchat.New(slackchat.Config{
		Transport: slackchat.TransportHTTP, BotToken: botToken, SigningSecret: signing, APIURL: slackURL,
	}, log, nil)
	if err != nil {
		return nil, nil, err
	}
	disp, err := dispatch.New(dispatch.Config{Channel: "C0BENCH", MaxConcurrentRuns: o.runs, UpdateInterval: o.update}, dispatch.Deps{
		Catalog: cat, Engine: engine, Remediator: &remediation.Remediator{Engine: engine, Store: st, Catalog: cat}, Store: st,
		Chat: sl, Logger: log, Redactor: sl.Redactor(),
	})
	if err != nil {
		return nil, nil, err
	}
	intake, err := alerts.New(alerts.Config{
		BearerToken: bearer, MaxQueue: o.maxQueue, Channel: "C0ALERTS",
		Routes: []alerts.Route{{
			Match: map[string]string{"alertname": "BenchAlert"}, Runbook: "bench-probe",
			Params: map[string]string{"host": "here", "instance": "{{ .labels.instance }}"},
		}},
	}, disp, alerts.Deps{TriggerDeps: dispatch.TriggerDeps{Store: st, Chat: sl, Logger: log}})
	return intake, disp, err
}

// notification is Alertmanager's webhook body for one firing alert.
func notification(i int) []byte {
	return fmt.Appendf(nil, `{"receiver":"runbot","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"BenchAlert","instance":"i-%05d","severity":"critical"},"annotations":{"summary":"benchmark alert %d"},"startsAt":"2026-11-29T07:46:43Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus.example:9090/graph","fingerprint":"%016x"}],"groupLabels":{"alertname":"BenchAlert"},"commonLabels":{"alertname":"BenchAlert"},"commonAnnotations":{},"externalURL":"http://alertmanager.example:9093","version":"4","groupKey":"{}:{alertname=\"BenchAlert\", instance=\"i-%05d\"}","truncatedAlerts":0}`+"\n", i, i, i+1, i)
}

type results struct {
	latencies []time.Duration
	full      int64
	elapsed   time.Duration
}

// send delivers notifications round by round (every alert once per
// round: the first round new, the others repeats), each until it is
// acknowledged.
func send(ctx context.Context, o options, url string) (*results, error) {
	jobs := make(chan int)
	res := &results{}
	var (
		mu   sync.Mutex
		full atomic.Int64
		errs = make(chan error, o.senders)
		wg   sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.senders}, Timeout: 30 * time.Second}
	start := time.Now()
	for range o.senders {
		wg.Go(func() {
			for i := range jobs {
				body := notification(i % o.d)
				for {
					t0 := time.Now()
					code, err := post(ctx, client, url, body)
					took := time.Since(t0)
					if err != nil {
						errs <- err
						return
					}
					if code == http.StatusServiceUnavailable {
						full.Add(1)
						time.Sleep(o.retry)
						continue
					}
					if code != http.StatusOK {
						errs <- fmt.Errorf("notification %d: HTTP %d", i, code)
						return
					}
					mu.Lock()
					res.latencies = append(res.latencies, took)
					mu.Unlock()
					break
				}
			}
		})
	}
	var err error
feed:
	for i := range o.n {
		select {
		case jobs <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	res.elapsed = time.Since(start)
	res.full = full.Load()
	return res, err
}

func post(ctx context.Context, c *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitRuns waits until every alert run is finished, then counts the runs
// and the alerts that have none.
func waitRuns(ctx context.Context, o options, st store.Store, alerts *alerts.Receiver) (int, int, error) {
	for {
		runs, err := st.ListRuns(ctx, store.RunFilter{Trigger: store.TriggerAlert, Limit: o.d * 2})
		if err != nil {
			return 0, 0, err
		}
		done := 0
		for _, r := range runs {
			if r.Status.Final() {
				done++
			}
		}
		if done >= o.d && alerts.QueueDepth() == 0 {
			dropped := 0
			for i := range o.d {
				a, err := st.GetAlert(ctx, fmt.Sprintf("%016x", i+1))
				if err != nil || a.RunID == "" {
					dropped++
				}
			}
			return len(runs), dropped, nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return len(runs), o.d - done, fmt.Errorf("waiting for runs (%d of %d done, queue %d): %w", done, o.d, alerts.QueueDepth(), ctx.Err())
		}
	}
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	i = min(max(i-1, 0), len(sorted)-1)
	return sorted[i].Round(10 * time.Microsecond)
}

func metric(reg *prometheus.Registry, name string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			total := 0.0
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return total
		}
	}
	return 0
}

// fakeSlackArg makes this program the fake Slack: it prints the API URL,
// then serves until its standard input closes.
const fakeSlackArg = "-fake-slack"

func serveFakeSlack() {
	rec := slackrec.New()
	defer rec.Close()
	fmt.Println(rec.APIURL())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
}

// startFakeSlack runs this program as the fake Slack and returns its API
// URL and a function that stops it.
func startFakeSlack(ctx context.Context) (string, func(), error) {
	cmd := exec.CommandContext(ctx, os.Args[0], fakeSlackArg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start the fake Slack: %w", err)
	}
	stop := func() {
		_ = stdin.Close() // ends the child's wait
		_ = cmd.Wait()    // its exit status says nothing about the benchmark
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("read the fake Slack's URL: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

// liveHeap is the bytes of heap objects, live and not yet swept, from the
// runtime's own accounting.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// sampleHeap reads liveHeap every 20 ms until the returned function is
// called, which returns the largest reading.
func sampleHeap(ctx context.Context) func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if h := liveHeap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-t.C:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// peakRSS is the process's high-water resident set (VmHWM), as Linux
// reports it.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
