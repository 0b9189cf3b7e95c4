// Command storm-bench is bench/storm/run.sh: it measures how long an alert
// storm takes to be diagnosed in Slack (the issue "An alert storm is
// diagnosed at runbot's pace, not Slack's"). For each scenario and each
// Slack mode it wires a fresh runbot the way `runbot serve` does
// (slackchat.New, dispatch.New, alerts.New, a new SQLite store, the runbook
// engine, the timeline upload) with serve's defaults, against a fake Slack
// Web API on loopback (fakeslack.go) that either accepts every call at
// once or enforces Slack's documented rate limits. It POSTs a storm of
// distinct alerts to the Alertmanager webhook and measures, per alert,
// from the 2xx of the notification that carried it to its run being
// queued, to its run starting, and to its verdict being visible in Slack.
//
//	go run ./bench/storm                                  # every scenario, both modes
//	go run ./bench/storm -scenarios single -modes limits -timeout 15m
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runbot/runbot/alerts"
	"github.com/runbot/runbot/chat/outbox"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/timeline"
)

const (
	token = "bench-bearer-token"
	// channel is the bot's channel (slack.channel in runbot.yaml): the
	// alerts' messages and, in their threads, their runs' go there, as
	// with serve's defaults when alerts.channel is not set.
	channel = "C0STORM"
	// parallel is serve's default `parallel` (config.Load): runs at once.
	parallel = 4
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "storm-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	scenarios, modes         []string
	groups, groupSize, alone int
	senders, maxQueue        int
	timeout, quiet           time.Duration
	dir, logFile             string
}

func run() error {
	var o options
	var scenarios, modes string
	flag.StringVar(&scenarios, "scenarios", "groups,single", "scenarios to run, in order: groups (grouped notifications), single (one alert per notification)")
	flag.StringVar(&modes, "modes", "permissive,limits", "fake Slack modes to run each scenario in, in order: permissive, limits")
	flag.IntVar(&o.groups, "groups", 50, "groups scenario: notifications (Alertmanager groups)")
	flag.IntVar(&o.groupSize, "group-size", 20, "groups scenario: distinct alerts per notification")
	flag.IntVar(&o.alone, "single", 200, "single scenario: distinct alerts, one per notification")
	flag.IntVar(&o.senders, "s", 4, "concurrent senders")
	flag.IntVar(&o.maxQueue, "max-queue", 1024, "alerts.max_queue (serve's default is 256; raised so that every alert of the storm is accepted at once)")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "deadline for one scenario in one mode; figures are reported as they stand then")
	flag.DurationVar(&o.quiet, "quiet", 10*time.Second, "a scenario ends once every run finished and the fake Slack accepted no call for this long")
	flag.StringVar(&o.dir, "dir", "bench/storm", "directory with runbooks/ and inventory.yaml")
	flag.StringVar(&o.logFile, "log", "", "also write runbot's log (info and above) to this file")
	flag.Parse()
	o.scenarios, o.modes = strings.Split(scenarios, ","), strings.Split(modes, ",")
	for _, m := range o.modes {
		if slackMode(m) != permissive && slackMode(m) != limits {
			return fmt.Errorf("mode %q: want permissive or limits", m)
		}
	}
	var storms []scenario
	for _, name := range o.scenarios {
		switch name {
		case "groups":
			storms = append(storms, grouped(o.groups, o.groupSize))
		case "single":
			storms = append(storms, singles(o.alone))
		default:
			return fmt.Errorf("scenario %q: want groups or single", name)
		}
	}
	if o.groups <= 0 || o.groupSize <= 0 || o.alone <= 0 || o.senders <= 0 {
		return errors.New("-groups, -group-size, -single and -s must be positive")
	}

	cat, problems, err := catalog.Load(filepath.Join(o.dir, "runbooks"))
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("bench runbooks: %v", problems)
	}
	inv, err := inventory.Load(filepath.Join(o.dir, "inventory.yaml"))
	if err != nil {
		return err
	}
	hosts := slices.Sorted(maps.Keys(inv.Hosts))
	logOut := io.Discard
	if o.logFile != "" {
		f, err := os.Create(o.logFile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		logOut = f
	}

	fmt.Printf("storm benchmark, %s: serve's defaults (parallel %d, update interval 1s, dedup window 1h), "+
		"alerts.max_queue raised to %d so that every alert is accepted at once; %d concurrent senders, "+
		"a 503 delivered again after its Retry-After\n\n",
		time.Now().Format("2006-01-02 15:04 MST"), parallel, o.maxQueue, o.senders)
	var results []result
	for _, sc := range storms {
		for _, m := range o.modes {
			fmt.Fprintf(os.Stderr, "== %s, Slack %s: %d alerts in %d notifications\n", sc.name, m, sc.alerts, len(sc.batches))
			res, err := storm(o, sc, slackMode(m), cat, inv, hosts, logOut)
			if err != nil {
				return fmt.Errorf("%s, Slack %s: %w", sc.name, m, err)
			}
			results = append(results, res)
			res.describe(os.Stdout)
		}
	}
	printTable(os.Stdout, results)
	// A storm that ran to its end must have started exactly one run per
	// distinct alert: fewer is an alert lost, more one run twice.
	for _, r := range results {
		if !r.timedOut && r.runs != r.alerts {
			return fmt.Errorf("FAILED: %s, Slack %s: %d runs started for %d distinct alerts", r.scenario, r.mode, r.runs, r.alerts)
		}
	}
	return nil
}

// scenario is one storm: the notifications Alertmanager sends.
type scenario struct {
	name    string
	batches []batch
	alerts  int
}

// batch is one notification: a group's key and labels, and the numbers of
// the alerts it carries.
type batch struct {
	groupKey    string
	groupLabels map[string]string
	alerts      []int
}

// grouped is n Alertmanager groups of size distinct alerts each.
func grouped(n, size int) scenario {
	sc := scenario{name: "groups", alerts: n * size}
	for g := range n {
		name := fmt.Sprintf("g%02d", g+1)
		b := batch{
			groupKey:    fmt.Sprintf(`{}:{alertname="BenchStorm", group=%q}`, name),
			groupLabels: map[string]string{"alertname": "BenchStorm", "group": name},
		}
		for i := range size {
			b.alerts = append(b.alerts, g*size+i)
		}
		sc.batches = append(sc.batches, b)
	}
	return sc
}

// singles is n distinct alerts, each in a group of its own.
func singles(n int) scenario {
	sc := scenario{name: "single", alerts: n}
	for i := range n {
		sc.batches = append(sc.batches, batch{
			groupKey:    fmt.Sprintf(`{}:{alertname="BenchStorm", instance=%q}`, instance(i)),
			groupLabels: map[string]string{"alertname": "BenchStorm", "instance": instance(i)},
			alerts:      []int{i},
		})
	}
	return sc
}

func instance(i int) string    { return fmt.Sprintf("i-%04d", i+1) }
func fingerprint(i int) string { return fmt.Sprintf("%016x", i+1) }

// amAlert and amNotification are Alertmanager's webhook body, version 4.
type amAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

type amNotification struct {
	Receiver          string            `json:"receiver"`
	Status            string            `json:"status"`
	Alerts            []amAlert         `json:"alerts"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
}

// body is the notification as Alertmanager would POST it. Every alert
// names one of the inventory's hosts; its annotation does not contain the
// verdict's text, so that only a run's message can show the verdict.
func (b batch) body(hosts []string) ([]byte, error) {
	n := amNotification{
		Receiver: "runbot", Status: "firing", GroupLabels: b.groupLabels, CommonAnnotations: map[string]string{},
		ExternalURL: "http://alertmanager.example:9093", Version: "4", GroupKey: b.groupKey,
	}
	for _, i := range b.alerts {
		labels := maps.Clone(b.groupLabels)
		labels["alertname"], labels["severity"] = "BenchStorm", "critical"
		labels["instance"], labels["host"] = instance(i), hosts[i%len(hosts)]
		n.Alerts = append(n.Alerts, amAlert{
			Status: "firing", Labels: labels, Annotations: map[string]string{"summary": fmt.Sprintf("storm alert %d", i+1)},
			StartsAt: "2026-11-29T07:46:43Z", EndsAt: "0001-01-01T00:00:00Z",
			GeneratorURL: "http://prometheus.example:9090/graph", Fingerprint: fingerprint(i),
		})
	}
	// The labels all alerts share: the group's, the name and severity,
	// and, for one alert, all of its own.
	n.CommonLabels = maps.Clone(b.groupLabels)
	n.CommonLabels["alertname"], n.CommonLabels["severity"] = "BenchStorm", "critical"
	if len(n.Alerts) == 1 {
		n.CommonLabels = n.Alerts[0].Labels
	}
	return json.Marshal(n)
}

// result is what one scenario in one Slack mode measured.
type result struct {
	scenario string
	mode     slackMode
	alerts   int
	// queued, started and shown are the latencies from an alert's
	// delivery to its run queued, started and its verdict visible in
	// Slack, sorted; alerts that never got there are left out.
	queued, started, shown []time.Duration
	notDelivered           int
	// noRun counts delivered alerts that have no run (by the end).
	noRun              int
	runs, runsFinished int
	neverShown         int
	refused            int64 // 503s answered (queue full), then delivered again
	slack              slackCounts
	wall               time.Duration
	timedOut           bool
	warnings           map[string]int
	shutdown           error
}

// storm runs one scenario against a fresh runbot and a fresh fake Slack
// in the given mode.
func storm(o options, sc scenario, mode slackMode, cat *catalog.Catalog, inv *inventory.Inventory, hosts []string, logOut io.Writer) (result, error) {
	res := result{scenario: sc.name, mode: mode, alerts: sc.alerts}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	tmp, err := os.MkdirTemp("", "storm-bench-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	fs, err := startFakeSlack(ctx, mode)
	if err != nil {
		return res, err
	}
	defer fs.close()
	st, err := store.Open(ctx, filepath.Join(tmp, "runbot.db"))
	if err != nil {
		return res, err
	}
	defer func() { _ = st.Close() }()
	warns := &warnCounter{counts: map[string]int{}}
	next := slog.Handler(slog.DiscardHandler)
	if logOut != io.Discard {
		next = slog.NewTextHandler(logOut, nil)
	}
	log := slog.New(&countingHandler{next: next, warns: warns}).With("scenario", sc.name, "slack", string(mode))
	intake, disp, ob, err := wire(o, tmp, fs.apiURL(), st, cat, inv, log)
	if err != nil {
		return res, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() { _ = intake.Run(runCtx) }()
	go func() { _ = ob.Run(runCtx) }()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: intake.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()

	s := newSender(o, sc, hosts, "http://"+l.Addr().String()+"/alerts/alertmanager")
	start := time.Now()
	go s.send(ctx)
	end, waitErr := wait(ctx, o, sc, st, intake, fs, s, start)
	switch {
	case errors.Is(waitErr, context.DeadlineExceeded):
		res.timedOut = true
		fmt.Fprintf(os.Stderr, "   timed out after %s: figures as they stand now\n", o.timeout)
	case waitErr != nil:
		return res, waitErr
	}
	res.wall = end.Sub(start)

	// The figures are read before the shutdown, which cancels what is
	// still in flight after a timeout, so that they are what Slack had
	// shown by then.
	mctx, mcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer mcancel()
	if err := measure(mctx, &res, sc, st, fs, s); err != nil {
		return res, err
	}
	res.refused = s.refused.Load()
	res.warnings = warns.snapshot()

	stop()
	_ = srv.Close()
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	res.shutdown = disp.Shutdown(sctx)
	return res, nil
}

// wire builds Slack, the chat outbox, the dispatcher and the alert intake
// as the serve command does with its defaults: one channel, `parallel` runs
// at once, the default update interval, dedup window, message layout
// (one summary per group) and outbox pace, the timeline picture uploaded
// after a run's diagnosis.
func wire(o options, tmp, slackURL string, st store.Store, cat *catalog.Catalog, inv *inventory.Inventory, log *slog.Logger) (*alerts.Receiver, *dispatch.Dispatcher, *outbox.Outbox, error) {
	secret := func(name, value string) (slackchat.SecretRef, error) {
		p := filepath.Join(tmp, name)
		return slackchat.SecretRef{File: p}, os.WriteFile(p, []byte(value), 0o600)
	}
	botToken, err := secret("bot-token", "xoxb-bench")
	if err != nil {
		return nil, nil, nil, err
	}
	signing, err := secret("signing", "bench-signing-secret")
	if err != nil {
		return nil, nil, nil, err
	}
	bearer, err := secret("bearer", token)
	if err != nil {
		return nil, nil, nil, err
	}
	engine := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	sl, err := slackchat.New(slackchat.Config{
		Transport: slackchat.TransportHTTP, BotToken: botToken, SigningSecret: signing, APIURL: slackURL,
	}, log, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	ob := outbox.New(sl, st, outbox.Config{Platform: "slack"}, log, nil)
	disp, err := dispatch.New(dispatch.Config{Channel: channel, MaxConcurrentRuns: parallel}, dispatch.Deps{
		Catalog: cat, Engine: engine, Remediator: &remediation.Remediator{Engine: engine, Store: st, Catalog: cat}, Store: st,
		Chat: ob, Logger: log, Timeline: timeline.ForChat, Redactor: sl.Redactor(),
	})
	if err != nil {
		return nil, nil, nil, err
	}
	intake, err := alerts.New(alerts.Config{
		BearerToken: bearer, MaxQueue: o.maxQueue,
		Routes: []alerts.Route{{
			Match: map[string]string{"alertname": "BenchStorm"}, Runbook: "bench-probe",
			Params: map[string]string{"host": "{{ .labels.host }}", "instance": "{{ .labels.instance }}"},
		}},
	}, disp, alerts.Deps{TriggerDeps: dispatch.TriggerDeps{Store: st, Chat: disp.Chat(), Logger: log}})
	return intake, disp, ob, err
}

// sender delivers a scenario's notifications as Alertmanager would: each
// until it is acknowledged, a 503 again after the Retry-After it carried.
type sender struct {
	o       options
	sc      scenario
	hosts   []string
	url     string
	refused atomic.Int64
	// done is closed when every notification was acknowledged or the
	// sending failed (err says why).
	done chan struct{}
	err  error

	mu sync.Mutex
	// delivered is, per alert, when the notification carrying it got its
	// 2xx; zero until then.
	delivered []time.Time
	acked     int
}

func newSender(o options, sc scenario, hosts []string, url string) *sender {
	return &sender{o: o, sc: sc, hosts: hosts, url: url, done: make(chan struct{}), delivered: make([]time.Time, sc.alerts)}
}

func (s *sender) send(ctx context.Context) {
	defer close(s.done)
	jobs := make(chan batch)
	errs := make(chan error, s.o.senders)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: s.o.senders}, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	for range s.o.senders {
		wg.Go(func() {
			for b := range jobs {
				if err := s.deliver(ctx, client, b); err != nil {
					errs <- err
					return
				}
			}
		})
	}
feed:
	for _, b := range s.sc.batches {
		select {
		case jobs <- b:
		case s.err = <-errs:
			break feed
		case <-ctx.Done():
			s.err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if s.err == nil && len(errs) > 0 {
		s.err = <-errs
	}
}

// deliver POSTs one notification until it is acknowledged.
func (s *sender) deliver(ctx context.Context, client *http.Client, b batch) error {
	body, err := b.body(s.hosts)
	if err != nil {
		return fmt.Errorf("encode notification %s: %w", b.groupKey, err)
	}
	for {
		code, retry, err := post(ctx, client, s.url, body)
		if err != nil {
			return fmt.Errorf("notification %s: %w", b.groupKey, err)
		}
		if code == http.StatusServiceUnavailable {
			s.refused.Add(1)
			select {
			case <-time.After(retry):
				continue
			case <-ctx.Done():
				return fmt.Errorf("notification %s refused, waiting to deliver it again: %w", b.groupKey, ctx.Err())
			}
		}
		if code != http.StatusOK {
			return fmt.Errorf("notification %s: HTTP %d", b.groupKey, code)
		}
		now := time.Now()
		s.mu.Lock()
		for _, i := range b.alerts {
			s.delivered[i] = now
		}
		s.acked++
		s.mu.Unlock()
		return nil
	}
}

// post sends one notification and returns the status and, for a 503, the
// Retry-After it asked for (5 s when it named none).
func post(ctx context.Context, c *http.Client, url string, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	retry := 5 * time.Second
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
		retry = time.Duration(n) * time.Second
	}
	return resp.StatusCode, retry, nil
}

func (s *sender) deliveries() ([]time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.delivered), s.acked
}

// wait waits until the storm is over: every notification acknowledged, no
// alert run queued or running, every run finished in the store, and the
// fake Slack quiet for o.quiet. It returns when the last call before that
// quiet was accepted, or the time it gave up at (ctx's deadline).
func wait(ctx context.Context, o options, sc scenario, st store.Store, intake *alerts.Receiver, fs *fakeSlack, s *sender, start time.Time) (time.Time, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastReport := time.Now()
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return time.Now(), ctx.Err()
		}
		if time.Since(lastReport) >= 30*time.Second {
			lastReport = time.Now()
			_, acked := s.deliveries()
			c := fs.progress()
			fmt.Fprintf(os.Stderr, "   %s: %d of %d notifications acknowledged, %d alert runs queued or running; "+
				"Slack accepted %d top-level, %d replies, %d updates and answered %d 429s\n",
				time.Since(start).Round(time.Second), acked, len(sc.batches), intake.QueueDepth(), c.TopLevel, c.Replies, c.Updates, c.limited())
		}
		select {
		case <-s.done:
			if s.err != nil {
				return time.Now(), fmt.Errorf("send: %w", s.err)
			}
		default:
			continue
		}
		last := fs.lastAccepted()
		if intake.QueueDepth() > 0 || time.Since(last) < o.quiet {
			continue
		}
		runs, err := st.ListRuns(ctx, store.RunFilter{Trigger: store.TriggerAlert, Limit: 2 * sc.alerts})
		if err != nil {
			return time.Now(), err
		}
		if !slices.ContainsFunc(runs, func(r store.Run) bool { return !r.Status.Final() }) {
			return last, nil
		}
	}
}

// verdictText is the bench runbook's finding summary for the probe's
// "errors=12" ('errors: {{ .steps.probe.values.errors }}%'): a run's
// message that says it carries the run's verdict.
const verdictText = "errors: 12%"

// verdictVisible says whether a message Slack accepted (content: its
// fallback text, a newline, its Block Kit JSON as runbot sent it) shows the
// verdict of run runID: it names the run (a run's message has its ID in the
// "Run" fact and the "runbot show" hint) and carries the finding's summary.
// The alert's own message names no run and its annotation is not the
// summary, so only the run's message, posted or updated, can match.
func verdictVisible(content, runID string) bool {
	return strings.Contains(content, runID) && strings.Contains(content, verdictText)
}

// runIDPattern finds the run IDs a message names (engine.NewRunID:
// r-YYYYMMDD-HHMMSS-hex), so that verdictVisible is asked only about the
// runs a message is about.
var runIDPattern = regexp.MustCompile(`r-[0-9]{8}-[0-9]{6}-[0-9a-f]+`)

// verdictsShown is, per run ID, when Slack first accepted a message that
// shows its verdict.
func verdictsShown(calls []slackCall) map[string]time.Time {
	shown := map[string]time.Time{}
	for _, c := range calls {
		for _, id := range runIDPattern.FindAllString(c.Content, -1) {
			if _, ok := shown[id]; !ok && verdictVisible(c.Content, id) {
				shown[id] = c.At
			}
		}
	}
	return shown
}

// measure reads, per alert, when its run was queued (the store's audit
// record of the work's creation, under the alert's trigger key) and
// started (the run's StartedAt), and when Slack first showed its verdict.
func measure(ctx context.Context, res *result, sc scenario, st store.Store, fs *fakeSlack, s *sender) error {
	queuedAt, err := enqueued(ctx, st)
	if err != nil {
		return err
	}
	calls, counts := fs.snapshot()
	res.slack = counts
	shown := verdictsShown(calls)
	delivered, _ := s.deliveries()
	for i := range sc.alerts {
		at := delivered[i]
		if at.IsZero() {
			res.notDelivered++
			continue
		}
		a, err := st.GetAlert(ctx, fingerprint(i))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("alert %s: %w", fingerprint(i), err)
		}
		if q, ok := queuedAt[a.TriggerKey]; ok && a.TriggerKey != "" {
			res.queued = append(res.queued, q.Sub(at))
		}
		if a.RunID == "" {
			res.noRun++
			res.neverShown++
			continue
		}
		run, err := st.GetRun(ctx, a.RunID)
		if err != nil {
			return fmt.Errorf("run %s of alert %s: %w", a.RunID, fingerprint(i), err)
		}
		res.started = append(res.started, run.StartedAt.Sub(at))
		if v, ok := shown[run.ID]; ok {
			res.shown = append(res.shown, v.Sub(at))
		} else {
			res.neverShown++
		}
	}
	runs, err := st.ListRuns(ctx, store.RunFilter{Trigger: store.TriggerAlert, Limit: 2 * sc.alerts})
	if err != nil {
		return err
	}
	res.runs = len(runs)
	for _, r := range runs {
		if r.Status.Final() {
			res.runsFinished++
		}
	}
	for _, d := range [][]time.Duration{res.queued, res.started, res.shown} {
		slices.Sort(d)
	}
	return nil
}

// enqueued is when each piece of work was queued, by its key (an alert's
// trigger key), from the store's audit log.
func enqueued(ctx context.Context, st store.Store) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	var after int64
	for {
		evs, err := st.Audit(ctx, store.AuditFilter{Kind: store.AuditWorkEnqueued, AfterID: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("read the audit log: %w", err)
		}
		for _, ev := range evs {
			after = max(after, ev.ID)
			var d struct {
				Key string `json:"key"`
			}
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				return nil, fmt.Errorf("audit event %d: %w", ev.ID, err)
			}
			out[d.Key] = ev.At
		}
		if len(evs) < 1000 {
			return out, nil
		}
	}
}

// describe prints one scenario's figures in full.
func (r result) describe(w io.Writer) {
	_, _ = fmt.Fprintf(w, "### %s, Slack %s", r.scenario, r.mode)
	if r.timedOut {
		_, _ = fmt.Fprintf(w, " (TIMED OUT: partial, as it stood after %s)", r.wall.Round(time.Second))
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintf(w, "alerts %d, not delivered %d, 503s answered %d; runs started %d (finished %d), alerts without a run %d\n",
		r.alerts, r.notDelivered, r.refused, r.runs, r.runsFinished, r.noRun)
	_, _ = fmt.Fprintf(w, "alert → run queued     %s (%d alerts)\n", spread(r.queued), len(r.queued))
	_, _ = fmt.Fprintf(w, "alert → run started    %s (%d alerts)\n", spread(r.started), len(r.started))
	_, _ = fmt.Fprintf(w, "alert → verdict shown  %s (%d alerts); never shown %d (alerts without a run included)\n", spread(r.shown), len(r.shown), r.neverShown)
	_, _ = fmt.Fprintf(w, "Slack accepted         %d top-level messages, %d thread replies, %d updates", r.slack.TopLevel, r.slack.Replies, r.slack.Updates)
	for _, m := range slices.Sorted(maps.Keys(r.slack.Other)) {
		_, _ = fmt.Fprintf(w, ", %d %s", r.slack.Other[m], m)
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintf(w, "Slack answered 429    %d", r.slack.limited())
	for _, m := range slices.Sorted(maps.Keys(r.slack.Limited)) {
		_, _ = fmt.Fprintf(w, " (%s %d)", m, r.slack.Limited[m])
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintf(w, "wall                   %s (first notification → last call Slack accepted)\n", r.wall.Round(100*time.Millisecond))
	if r.shutdown != nil {
		_, _ = fmt.Fprintf(w, "shutdown               %v\n", r.shutdown)
	}
	if len(r.warnings) > 0 {
		_, _ = fmt.Fprintln(w, "runbot's warnings and errors, by message:")
		keys := slices.SortedFunc(maps.Keys(r.warnings), func(a, b string) int { return r.warnings[b] - r.warnings[a] })
		for _, k := range keys {
			_, _ = fmt.Fprintf(w, "  %6d  %s\n", r.warnings[k], k)
		}
	}
	_, _ = fmt.Fprintln(w)
}

// printTable prints every result as one markdown table, then the ratios
// of each scenario's limits run to its permissive run.
func printTable(w io.Writer, results []result) {
	_, _ = fmt.Fprintln(w, "| scenario | Slack | alerts | runs started | alert → queued p50 / p99 / max | alert → run start p50 / p99 / max | alert → verdict shown p50 / p99 / max | verdicts never shown | top-level msgs | thread replies | updates | 429s (post / update) | wall |")
	_, _ = fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		wall := r.wall.Round(100 * time.Millisecond).String()
		if r.timedOut {
			wall = "timed out at " + r.wall.Round(time.Second).String() + " (partial)"
		}
		_, _ = fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %d | %d | %d | %d | %d / %d | %s |\n",
			r.scenario, r.mode, r.alerts, r.runs, spread(r.queued), spread(r.started), spread(r.shown), r.neverShown,
			r.slack.TopLevel, r.slack.Replies, r.slack.Updates, r.slack.Limited["chat.postMessage"], r.slack.Limited["chat.update"], wall)
	}
	_, _ = fmt.Fprintln(w)
	for _, lim := range results {
		if lim.mode != limits {
			continue
		}
		for _, per := range results {
			if per.mode != permissive || per.scenario != lim.scenario {
				continue
			}
			_, _ = fmt.Fprintf(w, "%s: run start p50/p99 limits ÷ permissive: %s / %s; verdict shown p50/p99: %s / %s\n", lim.scenario,
				ratio(pct(lim.started, 50), pct(per.started, 50)), ratio(pct(lim.started, 99), pct(per.started, 99)),
				ratio(pct(lim.shown, 50), pct(per.shown, 50)), ratio(pct(lim.shown, 99), pct(per.shown, 99)))
		}
	}
}

func spread(sorted []time.Duration) string {
	if len(sorted) == 0 {
		return "–"
	}
	return human(pct(sorted, 50)) + " / " + human(pct(sorted, 99)) + " / " + human(pct(sorted, 100))
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	i = min(max(i-1, 0), len(sorted)-1)
	return sorted[i]
}

// human shows a latency with the precision that matters at its size.
func human(d time.Duration) string {
	switch {
	case d < time.Second && d > -time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func ratio(a, b time.Duration) string {
	if b <= 0 || a <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
}

// countingHandler counts runbot's warnings and errors by message, for the
// report, and passes every record its next handler takes on to it.
type countingHandler struct {
	next  slog.Handler
	warns *warnCounter
}

type warnCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *warnCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

func (h *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.warns.mu.Lock()
		h.warns.counts[r.Message]++
		h.warns.mu.Unlock()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &countingHandler{next: h.next.WithAttrs(attrs), warns: h.warns}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{next: h.next.WithGroup(name), warns: h.warns}
}
