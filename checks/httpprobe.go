package checks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
)

// HTTPProbeOutput is what the http_probe check exposes to expressions.
type HTTPProbeOutput struct {
	OK          bool          `expr:"ok" json:"ok" doc:"the status was the expected one and the whole body arrived before every deadline"`
	Outcome     string        `expr:"outcome" json:"outcome" doc:"one word for what happened: ok, bad_status, timeout, refused or error"`
	Status      int           `expr:"status" json:"status" doc:"HTTP status code; 0 when no response header arrived"`
	Bytes       int64         `expr:"bytes" json:"bytes" doc:"response body bytes received (headers not counted)"`
	Connected   bool          `expr:"connected" json:"connected" doc:"a TCP connection to the server was established"`
	ConnectTime time.Duration `expr:"connect_time" json:"connect_time" doc:"time to establish the connection (through the host's SSH connection when via is target)"`
	FirstByte   time.Duration `expr:"first_byte" json:"first_byte" doc:"time from the start to the first response byte (the status line); 0 when none arrived"`
	FirstData   time.Duration `expr:"first_data" json:"first_data" doc:"time from the start to the first body byte; 0 when none arrived"`
	Total       time.Duration `expr:"total" json:"total" doc:"time from the start until the body was read, the exchange failed or a deadline expired"`
	TimedOut    bool          `expr:"timed_out" json:"timed_out" doc:"the connect, first-byte or total deadline expired"`
	Phase       string        `expr:"phase" json:"phase" doc:"where the probe stopped short: connect, first_byte or body; none when the exchange completed"`
	Error       string        `expr:"error" json:"error" doc:"what went wrong, empty when the exchange completed"`
	Started     time.Time     `expr:"started" json:"started" doc:"when the request was sent (after delay)"`
	RequestID   string        `expr:"request_id" json:"request_id" doc:"the unique id this probe sent (X-Request-Id header, and rid and user in JSON object bodies)"`
	Events      int           `expr:"events" json:"events" doc:"server-sent data events received, not counting [DONE] (stream only)"`
	Done        bool          `expr:"done" json:"done" doc:"the stream ended with data: [DONE] (stream only)"`
	Body        string        `expr:"body" json:"body" doc:"the start of the response body, at most max_body bytes"`
	URL         string        `expr:"url" json:"url" doc:"the URL that was probed"`
}

// Probe outcomes, the values of HTTPProbeOutput.Outcome and of the probe
// event's outcome label.
const (
	OutcomeOK        = step.ProbeOK
	OutcomeBadStatus = step.ProbeBadStatus
	OutcomeTimeout   = step.ProbeTimeout
	OutcomeRefused   = step.ProbeRefused
	OutcomeError     = step.ProbeError
)

// Probe phases, the values of HTTPProbeOutput.Phase.
const (
	PhaseConnect   = "connect"
	PhaseFirstByte = "first_byte"
	PhaseBody      = "body"
	PhaseNone      = "none"
)

// EventProbe is the kind of the event http_probe records for its request
// (see step.EventProbe). log_progress reads these events to recognise error
// lines that the probe itself caused.
const EventProbe = step.EventProbe

// RequestIDHeader carries the probe's request id.
const RequestIDHeader = "X-Request-Id"

var httpProbeType = Type{
	Spec: argspec.Spec{
		Name: "http_probe",
		Doc: "Sends one real HTTP request with separate connect, first-byte and total deadlines and records " +
			"status, bytes and timings. A hang is an observation, not an error: the probe reports how far it got.",
		Args: []argspec.Arg{
			{Name: "method", Type: argspec.String, Default: "GET", Doc: "HTTP method"},
			{Name: "path", Type: argspec.String, Default: "/", Escape: argspec.EscapeURLPath, Doc: "path (and query) joined to the target's URL; ignored when url is set"},
			{Name: "url", Type: argspec.String, Escape: argspec.EscapeURL, Doc: "absolute URL to probe instead of the target's URL plus path"},
			{Name: "body", Type: argspec.String, Escape: argspec.EscapeJSON, Doc: "request body; a JSON object body gets Content-Type application/json unless headers set one"},
			{Name: "headers", Type: argspec.StringMap, Escape: argspec.EscapeHeader, Doc: "extra request headers, name -> value"},
			{Name: "expect_status", Type: argspec.Int, Default: 200, Doc: "status that counts as ok; 0 accepts any 2xx status"},
			{Name: "connect_timeout", Type: argspec.Duration, Default: 5 * time.Second, Min: time.Duration(0), Doc: "deadline for establishing the connection; 0 for none of its own"},
			{Name: "first_byte_timeout", Type: argspec.Duration, Default: 30 * time.Second, Min: time.Duration(0), Doc: "deadline, from the start, for the first response byte; with stream, for the first body byte, because streaming servers send headers before any token; 0 for none of its own"},
			{Name: "total_timeout", Type: argspec.Duration, Default: 60 * time.Second, Min: time.Duration(0), Doc: "deadline, from the start, for the whole exchange including the body; keep it below the step timeout; 0 for none of its own"},
			{Name: "stream", Type: argspec.Bool, Default: false, Doc: "the response is a server-sent event stream: count data events and watch for data: [DONE]"},
			{Name: "via", Type: argspec.String, Default: "target", Enum: []string{"target", "bot"}, Doc: "target dials from the target's host (through its SSH connection), so loopback-only services are reachable; bot dials from where runbot runs"},
			{Name: "tag_body", Type: argspec.Bool, Default: true, Doc: "put the request id into a JSON object body as rid and user (unless already set), so that server log lines name the probe"},
			{Name: "delay", Type: argspec.Duration, Default: time.Duration(0), Min: time.Duration(0), Doc: "wait this long after the step starts before sending, e.g. so that a second request finds the first one under way"},
			{Name: "fallback_path", Type: argspec.String, Escape: argspec.EscapeURLPath, Doc: "path to probe instead when path answers 404, e.g. an endpoint's older name (/get_server_info for /server_info)"},
			{Name: "max_body", Type: argspec.Int, Default: 4096, Doc: "bytes of the response body kept in body; all bytes are counted"},
		},
		Outputs: reflect.TypeFor[HTTPProbeOutput](),
	},
	Check:   HTTPProbe{},
	Timeout: 3 * time.Minute,
}

// HTTPProbe is the http_probe check.
type HTTPProbe struct{}

// Plan implements Check.
func (HTTPProbe) Plan(env Env) []string {
	args := httpProbeType.Spec.WithDefaults(env.Args)
	u, _, err := probeURL(env, args)
	if err != nil {
		return []string{"http_probe: " + err.Error()}
	}
	from := "from runbot"
	if args.String("via") == "target" && env.Target.Runner != nil {
		from = "from " + env.Target.Runner.Host()
	}
	s := fmt.Sprintf("%s %s %s (connect ≤%s, first byte ≤%s, total ≤%s) with a fresh X-Request-Id",
		args.String("method"), u, from, args.Duration("connect_timeout"), args.Duration("first_byte_timeout"), args.Duration("total_timeout"))
	if args.Bool("stream") {
		s += ", reading a server-sent event stream"
	}
	return []string{s}
}

// Run implements Check.
func (HTTPProbe) Run(ctx context.Context, env Env) (step.Result, error) {
	args := httpProbeType.Spec.WithDefaults(env.Args)
	u, display, err := probeURL(env, args)
	if err != nil {
		return step.Result{}, err
	}
	dial, err := probeDialer(ctx, env, args.String("via"))
	if err != nil {
		return step.Result{}, err
	}
	id := newRequestID()
	body := args.String("body")
	if args.Bool("tag_body") {
		body = tagJSONBody(body, id)
	}
	p := probe{
		method:       strings.ToUpper(args.String("method")),
		url:          u,
		display:      display,
		body:         body,
		headers:      args.Map("headers"),
		requestID:    id,
		expect:       args.Int("expect_status"),
		connectLimit: args.Duration("connect_timeout"),
		firstLimit:   args.Duration("first_byte_timeout"),
		totalLimit:   args.Duration("total_timeout"),
		stream:       args.Bool("stream"),
		maxBody:      args.Int("max_body"),
		dial:         dial,
	}
	if d := args.Duration("delay"); d > 0 {
		if err := wait(ctx, env, d); err != nil {
			return step.Result{}, fmt.Errorf("probe %s %s: wait %s before sending: %w", p.method, u, d, err)
		}
	}
	o, start, err := p.observe(ctx, env)
	if err != nil {
		return step.Result{}, err
	}
	var tried []string
	if fb := args.String("fallback_path"); fb != "" && o.Status == http.StatusNotFound && args.String("url") == "" {
		// An endpoint renamed between versions (SGLang's /get_server_info
		// became /server_info): the old name is asked only where the new
		// one does not exist, so that a current build logs no deprecation
		// warning for every run.
		tried = append(tried, probeEvidence(p, o))
		path := "/" + strings.TrimLeft(fb, "/")
		p.url, p.display = strings.TrimRight(env.Target.URL, "/")+path, path
		p.requestID = newRequestID()
		if o, start, err = p.observe(ctx, env); err != nil {
			return step.Result{}, err
		}
		u = p.url
	}
	line := probeEvidence(p, o)
	return step.Result{
		Values:   o,
		Evidence: append(tried, line),
		Events: []step.Event{{
			Kind: EventProbe, Time: start, End: start.Add(o.Total), Text: line,
			Labels: map[string]string{
				"request_id": o.RequestID, "outcome": o.Outcome, "phase": o.Phase,
				"status": fmt.Sprint(o.Status), "method": p.method, "url": u,
			},
		}},
	}, nil
}

// observe performs the exchange, or takes it from the tape, and returns
// what was seen and when the request was sent.
func (p *probe) observe(ctx context.Context, env Env) (HTTPProbeOutput, time.Time, error) {
	start := clock(env)()
	var o HTTPProbeOutput
	if env.Tape != nil {
		do := func() HTTPProbeOutput {
			o := p.do(ctx)
			o.Started = start
			return o
		}
		var err error
		if o, err = env.Tape.Probe(ctx, p.url, do); err != nil {
			return HTTPProbeOutput{}, time.Time{}, fmt.Errorf("probe %s %s: %w", p.method, p.url, err)
		}
		// A replayed exchange carries the request id it was sent with,
		// which the evidence and the log attribution must name.
		p.requestID = o.RequestID
		start = o.Started
		// Whether a completed exchange counts as ok is the runbook's
		// judgement (expect_status), not part of the observation.
		if o.Outcome == OutcomeOK || o.Outcome == OutcomeBadStatus {
			o.OK = statusOK(o.Status, p.expect)
			o.Outcome = OutcomeBadStatus
			if o.OK {
				o.Outcome = OutcomeOK
			}
		}
	} else {
		o = p.do(ctx)
		o.Started = start
	}
	if ctx.Err() != nil {
		// The step or the run ended before the probe's own deadlines did;
		// a partial observation cut off by someone else is not evidence.
		return HTTPProbeOutput{}, time.Time{}, fmt.Errorf("probe %s %s: stopped before its own deadlines: %w", p.method, p.url, context.Cause(ctx))
	}
	return o, start, nil
}

// probeURL resolves the url argument, or the target's URL joined with path.
// display is how evidence names it: just the path when the URL is the
// target's own, since the evidence is already filed under the target.
func probeURL(env Env, args argspec.Values) (u, display string, err error) {
	if u := args.String("url"); u != "" {
		return u, u, nil
	}
	if env.Target.URL == "" {
		return "", "", fmt.Errorf("probe %s: the target has no URL in the inventory and the step sets no url", env.Target.Name())
	}
	path := "/" + strings.TrimLeft(args.String("path"), "/")
	return strings.TrimRight(env.Target.URL, "/") + path, path, nil
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// probeDialer picks how connections are opened: from the target's host
// (through its Runner, an SSH tunnel for remote hosts) or from runbot itself.
// Going through the host, it first makes sure the host itself is reachable:
// an SSH failure (host down, changed host key) means the check could not
// observe, and must never read as "the service refused the connection".
func probeDialer(ctx context.Context, env Env, via string) (dialFunc, error) {
	if via == "bot" {
		var d net.Dialer
		return d.DialContext, nil
	}
	if env.Target.Runner == nil {
		return nil, fmt.Errorf("probe via %s: no connection to the host", env.Target.Name())
	}
	if c, ok := env.Target.Runner.(interface{ Connect(context.Context) error }); ok {
		if err := c.Connect(ctx); err != nil {
			return nil, fmt.Errorf("reach %s to probe through it: %w", env.Target.Runner.Host(), err)
		}
	}
	return env.Target.Runner.DialContext, nil
}

// newRequestID returns a fresh id that is unique enough to find in logs.
func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return "rb-" + hex.EncodeToString(b)
}

// tagJSONBody adds the request id to a JSON object body as "rid" (SGLang's
// request id, which its engines log) and "user" (the OpenAI field that
// routers pass through), without overwriting either. Any other body is
// returned unchanged.
func tagJSONBody(body, id string) string {
	trimmed := strings.TrimSpace(body)
	if !strings.HasPrefix(trimmed, "{") {
		return body
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(trimmed), &obj); err != nil {
		return body
	}
	quoted, _ := json.Marshal(id)
	for _, k := range []string{"rid", "user"} {
		if _, ok := obj[k]; !ok {
			obj[k] = quoted
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return string(out)
}

var (
	errConnectTimeout   = errors.New("connect deadline expired")
	errFirstByteTimeout = errors.New("first-byte deadline expired")
	errTotalTimeout     = errors.New("total deadline expired")
)

// probe is one configured HTTP exchange.
type probe struct {
	method, url, body string
	display           string
	headers           map[string]string
	requestID         string
	expect            int
	connectLimit      time.Duration
	firstLimit        time.Duration
	totalLimit        time.Duration
	stream            bool
	maxBody           int
	dial              dialFunc
}

// timings is written from transport goroutines and read after the exchange.
type timings struct {
	mu               sync.Mutex
	connected        bool
	connectTimedOut  bool
	connectTime      time.Duration
	firstByte        time.Duration
	firstByteArrived bool
}

func (t *timings) set(f func(*timings)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t)
}

// deadline runs f after d; a zero or negative d means no deadline of its
// own (the step's timeout still applies).
func deadline(d time.Duration, f func()) *time.Timer {
	if d <= 0 {
		t := time.AfterFunc(time.Hour, f)
		t.Stop()
		return t
	}
	return time.AfterFunc(d, f)
}

// do performs the exchange. It never returns an error: every failure is
// part of the observation.
func (p probe) do(parent context.Context) HTTPProbeOutput {
	o := HTTPProbeOutput{RequestID: p.requestID, URL: p.url, Phase: PhaseNone}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	totalTimer := deadline(p.totalLimit, func() { cancel(errTotalTimeout) })
	defer totalTimer.Stop()
	firstTimer := deadline(p.firstLimit, func() { cancel(errFirstByteTimeout) })
	defer firstTimer.Stop()

	var tm timings
	tr := &http.Transport{
		Proxy:             nil, // a probe measures the path to the server, never an environment proxy
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dctx, dcancel := ctx, context.CancelFunc(func() {})
			if p.connectLimit > 0 {
				dctx, dcancel = context.WithTimeoutCause(ctx, p.connectLimit, errConnectTimeout)
			}
			defer dcancel()
			c, err := p.dial(dctx, network, addr)
			elapsed := time.Since(start)
			tm.set(func(t *timings) {
				t.connectTime = elapsed
				t.connected = err == nil
				t.connectTimedOut = err != nil && errors.Is(context.Cause(dctx), errConnectTimeout)
			})
			return c, err
		},
		TLSHandshakeTimeout: p.connectLimit,
	}
	defer tr.CloseIdleConnections()

	var body io.Reader
	if p.body != "" {
		body = strings.NewReader(p.body)
	}
	trace := &httptrace.ClientTrace{
		GotFirstResponseByte: func() {
			elapsed := time.Since(start)
			tm.set(func(t *timings) { t.firstByte, t.firstByteArrived = elapsed, true })
			if !p.stream {
				firstTimer.Stop()
			}
		},
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), p.method, p.url, body)
	if err != nil {
		o.Outcome, o.Error, o.Phase = OutcomeError, fmt.Sprintf("build request: %v", err), PhaseConnect
		return o
	}
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(RequestIDHeader, p.requestID)
	if p.body != "" && req.Header.Get("Content-Type") == "" && strings.HasPrefix(strings.TrimSpace(p.body), "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.stream && req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "text/event-stream")
	}

	client := &http.Client{
		Transport: tr,
		// A redirect is an answer in its own right; following it would
		// probe something else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		o.Total = time.Since(start)
		p.classifyFailure(&o, &tm, err, context.Cause(ctx))
		return o
	}
	defer func() { _ = resp.Body.Close() }() // read to the end or abandoned; the close has nothing to add
	o.Status = resp.StatusCode

	rd := bodyReader{max: p.maxBody, stream: p.stream}
	readErr := rd.readAll(resp.Body, func() {
		o.FirstData = time.Since(start)
		if p.stream {
			firstTimer.Stop()
		}
	})
	o.Total = time.Since(start)
	o.Bytes, o.Body, o.Events, o.Done = rd.n, string(rd.kept), rd.events, rd.done
	if readErr != nil {
		p.classifyFailure(&o, &tm, readErr, context.Cause(ctx))
		return o
	}
	tm.set(func(t *timings) { o.Connected, o.ConnectTime, o.FirstByte = t.connected, t.connectTime, t.firstByte })
	if statusOK(o.Status, p.expect) {
		o.OK, o.Outcome = true, OutcomeOK
	} else {
		o.Outcome = OutcomeBadStatus
	}
	return o
}

// classifyFailure fills in timed_out, phase, outcome and error for an
// exchange that did not complete. cause is the probe context's cause, which
// names the deadline that expired, if any.
func (p probe) classifyFailure(o *HTTPProbeOutput, tm *timings, err, cause error) {
	tm.mu.Lock()
	o.Connected, o.ConnectTime, o.FirstByte = tm.connected, tm.connectTime, tm.firstByte
	connectTimedOut, firstByteArrived := tm.connectTimedOut, tm.firstByteArrived
	tm.mu.Unlock()

	deadline := errors.Is(cause, errFirstByteTimeout) || errors.Is(cause, errTotalTimeout)
	switch {
	case !o.Connected:
		o.Phase = PhaseConnect
	case !firstByteArrived, p.stream && o.Bytes == 0 && errors.Is(cause, errFirstByteTimeout):
		o.Phase = PhaseFirstByte
	default:
		o.Phase = PhaseBody
	}
	switch {
	case connectTimedOut || deadline:
		o.TimedOut, o.Outcome = true, OutcomeTimeout
	case isRefused(err):
		o.Outcome = OutcomeRefused
	default:
		o.Outcome = OutcomeError
	}
	switch {
	case connectTimedOut:
		o.Error = fmt.Sprintf("no connection within %s", p.connectLimit)
	case errors.Is(cause, errFirstByteTimeout):
		o.Error = fmt.Sprintf("no first byte within %s", p.firstLimit)
	case errors.Is(cause, errTotalTimeout):
		o.Error = fmt.Sprintf("not finished within %s", p.totalLimit)
	default:
		o.Error = unwrapURLError(err).Error()
	}
}

func statusOK(status, expect int) bool {
	if expect == 0 {
		return status >= 200 && status < 300
	}
	return status == expect
}

// isRefused recognises a refused connection both from a local dial and from
// an SSH tunnel, whose server only reports it as text.
func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(strings.ToLower(err.Error()), "connection refused")
}

// unwrapURLError drops net/http's `Get "http://…":` prefix, which the
// evidence line already says.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// bodyReader counts a response body, keeps its start and, for server-sent
// event streams, counts data events line by line without buffering the
// stream.
type bodyReader struct {
	max    int
	stream bool

	n      int64
	kept   []byte
	events int
	done   bool
	line   []byte // the start of the current line, enough to classify it
}

func (r *bodyReader) readAll(body io.Reader, first func()) error {
	buf := make([]byte, 32<<10)
	for {
		k, err := body.Read(buf)
		if k > 0 {
			if r.n == 0 {
				first()
			}
			r.n += int64(k)
			if room := r.max - len(r.kept); room > 0 {
				r.kept = append(r.kept, buf[:min(k, room)]...)
			}
			if r.stream {
				r.scan(buf[:k])
			}
		}
		if errors.Is(err, io.EOF) {
			if r.stream {
				r.endLine()
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

const sseLinePrefix = 16

func (r *bodyReader) scan(p []byte) {
	for _, b := range p {
		if b == '\n' {
			r.endLine()
			continue
		}
		if len(r.line) < sseLinePrefix {
			r.line = append(r.line, b)
		}
	}
}

func (r *bodyReader) endLine() {
	line := strings.TrimRight(string(r.line), "\r")
	r.line = r.line[:0]
	data, ok := strings.CutPrefix(line, "data:")
	if !ok {
		return
	}
	if strings.TrimSpace(data) == "[DONE]" {
		r.done = true
		return
	}
	r.events++
}

// probeEvidence is the one line an on-call engineer reads about the probe.
func probeEvidence(p probe, o HTTPProbeOutput) string {
	what := p.method + " " + p.display
	if p.stream {
		what += " (stream)"
	}
	id := "request id " + o.RequestID
	switch {
	case o.Outcome == OutcomeOK:
		s := fmt.Sprintf("%s: %d after %s, %s", what, o.Status, round(o.Total), byteCount(o.Bytes))
		if p.stream {
			s += fmt.Sprintf(", %d events, first after %s", o.Events, round(o.FirstData))
			if !o.Done {
				s += ", no [DONE]"
			}
		}
		return s + ", " + id
	case o.Outcome == OutcomeBadStatus:
		s := fmt.Sprintf("%s: %d %s (expected %s) after %s, %s", what, o.Status, http.StatusText(o.Status), expectText(p.expect), round(o.Total), byteCount(o.Bytes))
		if snippet := oneLine(o.Body, 160); snippet != "" {
			s += ": " + snippet
		}
		return s + ", " + id
	case o.Phase == PhaseConnect && o.TimedOut:
		return fmt.Sprintf("%s: could not connect within %s, %s", what, round(p.connectLimit), id)
	case o.Phase == PhaseConnect:
		return fmt.Sprintf("%s: %s after %s (%s), %s", what, connectWord(o.Outcome), round(o.Total), o.Error, id)
	case o.Phase == PhaseFirstByte && o.Status != 0:
		return fmt.Sprintf("%s: status %d after %s, then no data for %s (%s), 0 bytes, %s",
			what, o.Status, round(o.FirstByte), round(o.Total-o.FirstByte), timeoutText(o), id)
	case o.Phase == PhaseFirstByte:
		return fmt.Sprintf("%s: no byte after %s (%s), connected in %s, %s", what, round(o.Total), timeoutText(o), round(o.ConnectTime), id)
	default: // body
		return fmt.Sprintf("%s: %d, %s received, then %s after %s (%s), %s", what, o.Status, byteCount(o.Bytes), bodyFailWord(o), round(o.Total), o.Error, id)
	}
}

func timeoutText(o HTTPProbeOutput) string {
	if o.TimedOut {
		return "timed out waiting for first byte"
	}
	return o.Error
}

func connectWord(outcome string) string {
	if outcome == OutcomeRefused {
		return "connection refused"
	}
	return "connection failed"
}

func bodyFailWord(o HTTPProbeOutput) string {
	if o.TimedOut {
		return "stalled"
	}
	return "broke off"
}

func expectText(expect int) string {
	if expect == 0 {
		return "2xx"
	}
	return fmt.Sprint(expect)
}

func byteCount(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 10_000:
		return fmt.Sprintf("%d bytes", n)
	case n < 10_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
