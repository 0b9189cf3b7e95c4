package checks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

// probeEnv returns an Env whose target is the given server, reached through
// a local Runner, as it would be through an SSH connection.
func probeEnv(baseURL string, args argspec.Values) Env {
	return Env{
		Target: target.Target{Role: "router", Host: "gpu-node-01", Runner: &remote.Local{Name: "gpu-node-01"}, URL: baseURL},
		Args:   args,
	}
}

func runProbe(t *testing.T, env Env) (HTTPProbeOutput, step.Result) {
	t.Helper()
	res, err := HTTPProbe{}.Run(t.Context(), env)
	require.NoError(t, err)
	o, ok := res.Values.(HTTPProbeOutput)
	require.True(t, ok, "Values is %T", res.Values)
	require.Len(t, res.Evidence, 1)
	t.Log(res.Evidence[0])
	require.Len(t, res.Events, 1)
	ev := res.Events[0]
	require.Equal(t, EventProbe, ev.Kind)
	require.Equal(t, o.RequestID, ev.Labels["request_id"])
	require.Equal(t, o.Outcome, ev.Labels["outcome"])
	require.False(t, ev.End.Before(ev.Time))
	return o, res
}

// hang blocks until the client goes away, sending nothing: the incident's
// router, which kept the connection open and never answered. It reads the
// request body first, because net/http only notices a client hanging up
// once the body has been consumed.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func TestHTTPProbeFast200(t *testing.T) {
	var gotID atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotID.Store(r.Header.Get(RequestIDHeader))
		_, _ = fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	o, res := runProbe(t, probeEnv(srv.URL, argspec.Values{"path": "/health"}))
	require.True(t, o.OK)
	require.Equal(t, OutcomeOK, o.Outcome)
	require.Equal(t, 200, o.Status)
	require.EqualValues(t, 2, o.Bytes)
	require.Equal(t, "ok", o.Body)
	require.True(t, o.Connected)
	require.False(t, o.TimedOut)
	require.Equal(t, PhaseNone, o.Phase)
	require.Empty(t, o.Error)
	require.Equal(t, srv.URL+"/health", o.URL)
	require.Regexp(t, `^rb-[0-9a-f]{24}$`, o.RequestID)
	require.Equal(t, o.RequestID, gotID.Load(), "the server saw the id the output reports")
	require.LessOrEqual(t, o.ConnectTime, o.FirstByte)
	require.LessOrEqual(t, o.FirstByte, o.Total)
	require.Contains(t, res.Evidence[0], "GET /health: 200 after")
	require.Contains(t, res.Evidence[0], "2 bytes")
}

func TestHTTPProbeHangIsAFindingNotAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hang))
	defer srv.Close()

	o, res := runProbe(t, probeEnv(srv.URL, argspec.Values{
		"method": "POST", "path": "/v1/chat/completions", "body": `{"messages":[{"role":"user","content":"hi"}]}`,
		"first_byte_timeout": 300 * time.Millisecond, "total_timeout": 10 * time.Second,
	}))
	require.False(t, o.OK)
	require.True(t, o.TimedOut)
	require.Equal(t, OutcomeTimeout, o.Outcome)
	require.Equal(t, PhaseFirstByte, o.Phase)
	require.True(t, o.Connected)
	require.Zero(t, o.Status)
	require.Zero(t, o.Bytes)
	require.GreaterOrEqual(t, o.Total, 300*time.Millisecond)
	require.Contains(t, res.Evidence[0], "POST /v1/chat/completions: no byte after")
	require.Contains(t, res.Evidence[0], "timed out waiting for first byte")
	require.Contains(t, res.Evidence[0], o.RequestID)
}

func TestHTTPProbeSlowFirstByteWithinDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		_, _ = fmt.Fprint(w, `{"choices":[]}`)
	}))
	defer srv.Close()

	o, _ := runProbe(t, probeEnv(srv.URL, argspec.Values{"first_byte_timeout": 10 * time.Second}))
	require.True(t, o.OK)
	require.GreaterOrEqual(t, o.FirstByte, 200*time.Millisecond)
	require.GreaterOrEqual(t, o.FirstData, o.FirstByte)
}

func TestHTTPProbeStallsInBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = fmt.Fprint(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()

	o, res := runProbe(t, probeEnv(srv.URL, argspec.Values{"total_timeout": 400 * time.Millisecond}))
	require.True(t, o.TimedOut)
	require.Equal(t, PhaseBody, o.Phase)
	require.Equal(t, 200, o.Status)
	require.EqualValues(t, 7, o.Bytes)
	require.Contains(t, res.Evidence[0], "7 bytes received, then stalled")
}

func sseServer(events int, thenHang bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i := range events {
			_, _ = fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"tok%d\"}}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		if thenHang {
			<-r.Context().Done()
			return
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

func TestHTTPProbeSSEStream(t *testing.T) {
	srv := sseServer(3, false)
	defer srv.Close()

	o, res := runProbe(t, probeEnv(srv.URL, argspec.Values{"method": "POST", "path": "/v1/chat/completions", "stream": true}))
	require.True(t, o.OK)
	require.Equal(t, 3, o.Events)
	require.True(t, o.Done)
	require.Positive(t, o.FirstData)
	require.Contains(t, res.Evidence[0], "(stream): 200 after")
	require.Contains(t, res.Evidence[0], "3 events")
}

// A streaming server sends its headers at once, even when no token will
// ever come; the first-byte deadline then applies to the first data.
func TestHTTPProbeSSEHeadersThenNothing(t *testing.T) {
	srv := sseServer(0, true)
	defer srv.Close()

	o, res := runProbe(t, probeEnv(srv.URL, argspec.Values{
		"method": "POST", "path": "/v1/chat/completions", "stream": true, "first_byte_timeout": 300 * time.Millisecond,
	}))
	require.False(t, o.OK)
	require.True(t, o.TimedOut)
	require.Equal(t, PhaseFirstByte, o.Phase)
	require.Equal(t, 200, o.Status)
	require.Zero(t, o.Bytes)
	require.Zero(t, o.Events)
	require.Contains(t, res.Evidence[0], "status 200 after")
	require.Contains(t, res.Evidence[0], "then no data for")
}

func TestHTTPProbeConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	for _, via := range []string{"target", "bot"} {
		t.Run(via, func(t *testing.T) {
			o, res := runProbe(t, probeEnv("http://"+addr, argspec.Values{"path": "/health", "via": via}))
			require.False(t, o.OK)
			require.False(t, o.TimedOut)
			require.False(t, o.Connected)
			require.Equal(t, OutcomeRefused, o.Outcome)
			require.Equal(t, PhaseConnect, o.Phase)
			require.Contains(t, o.Error, "connection refused")
			require.Contains(t, res.Evidence[0], "GET /health: connection refused after")
		})
	}
}

func TestHTTPProbe503(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprint(w, `{"error":{"type":"Service Unavailable","code":"server_selection_failed","message":"No available servers"}}`)
	}))
	defer srv.Close()

	o, res := runProbe(t, probeEnv(srv.URL, argspec.Values{"path": "/v1/chat/completions", "method": "POST"}))
	require.False(t, o.OK)
	require.False(t, o.TimedOut)
	require.Equal(t, OutcomeBadStatus, o.Outcome)
	require.Equal(t, 503, o.Status)
	require.Positive(t, o.Bytes)
	require.Equal(t, PhaseNone, o.Phase)
	require.Contains(t, res.Evidence[0], "503 Service Unavailable (expected 200)")
	require.Contains(t, res.Evidence[0], "server_selection_failed")
}

func TestHTTPProbeExpectAny2xx(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	o, _ := runProbe(t, probeEnv(srv.URL, argspec.Values{"expect_status": 0}))
	require.True(t, o.OK)
	require.Equal(t, 204, o.Status)
}

func TestHTTPProbeTagsJSONBody(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		m["content-type"] = r.Header.Get("Content-Type")
		got.Store(m)
	}))
	defer srv.Close()

	o, _ := runProbe(t, probeEnv(srv.URL, argspec.Values{"method": "POST", "body": `{"model":"deepseek-v4","user":"oncall"}`}))
	m := got.Load().(map[string]any)
	require.Equal(t, o.RequestID, m["rid"])
	require.Equal(t, "oncall", m["user"], "a field the runbook set is kept")
	require.Equal(t, "deepseek-v4", m["model"])
	require.Equal(t, "application/json", m["content-type"])

	_, _ = runProbe(t, probeEnv(srv.URL, argspec.Values{"method": "POST", "body": `{"model":"m"}`, "tag_body": false}))
	m = got.Load().(map[string]any)
	require.NotContains(t, m, "rid")
}

func TestTagJSONBodyLeavesOtherBodiesAlone(t *testing.T) {
	for _, body := range []string{"", "plain text", "[1,2]", "{broken"} {
		require.Equal(t, body, tagJSONBody(body, "rb-1"))
	}
}

// dialCounter is a Runner whose dials are counted, to prove that via target
// goes through the host's connection and via bot does not.
type dialCounter struct {
	remote.Local
	dials atomic.Int32
	block bool
}

func (d *dialCounter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	if d.block {
		// A tunnel that never opens, like an SSH channel to a host whose
		// SYNs are dropped.
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.Local.DialContext(ctx, network, addr)
}

func TestHTTPProbeDialsThroughTarget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	r := &dialCounter{}
	env := probeEnv(srv.URL, argspec.Values{})
	env.Target.Runner = r

	o, _ := runProbe(t, env)
	require.True(t, o.OK)
	require.EqualValues(t, 1, r.dials.Load())

	env.Args = argspec.Values{"via": "bot"}
	o, _ = runProbe(t, env)
	require.True(t, o.OK)
	require.EqualValues(t, 1, r.dials.Load(), "via bot must not use the host's connection")
}

func TestHTTPProbeConnectTimeout(t *testing.T) {
	env := probeEnv("http://10.0.0.1:30001", argspec.Values{"connect_timeout": 200 * time.Millisecond})
	env.Target.Runner = &dialCounter{block: true}

	o, res := runProbe(t, env)
	require.True(t, o.TimedOut)
	require.Equal(t, OutcomeTimeout, o.Outcome)
	require.Equal(t, PhaseConnect, o.Phase)
	require.False(t, o.Connected)
	require.Contains(t, res.Evidence[0], "could not connect within")
}

func TestHTTPProbeStoppedByRunIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(hang))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()

	_, err := HTTPProbe{}.Run(ctx, probeEnv(srv.URL, argspec.Values{}))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestHTTPProbeNeedsAURL(t *testing.T) {
	_, err := HTTPProbe{}.Run(t.Context(), Env{Target: target.Target{Role: "router"}, Args: argspec.Values{}})
	require.ErrorContains(t, err, "no URL")
}

func TestHTTPProbePlan(t *testing.T) {
	plan := HTTPProbe{}.Plan(probeEnv("http://127.0.0.1:30001", argspec.Values{"method": "POST", "path": "v1/chat/completions"}))
	require.Equal(t, []string{"POST http://127.0.0.1:30001/v1/chat/completions from gpu-node-01 (connect ≤5s, first byte ≤30s, total ≤1m0s) with a fresh X-Request-Id"}, plan)
}

func TestHTTPProbeZeroDeadlinesMeanNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		_, _ = fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	o, _ := runProbe(t, probeEnv(srv.URL, argspec.Values{"connect_timeout": time.Duration(0), "first_byte_timeout": time.Duration(0), "total_timeout": time.Duration(0)}))
	require.True(t, o.OK, o.Error)
}

// An endpoint renamed between SGLang versions: the new path is asked
// first, the old one only where the new one answers 404.
func TestHTTPProbeFallbackPath(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		if r.URL.Path != "/get_server_info" {
			http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, `{"disable_overlap_schedule": true}`)
	}))
	t.Cleanup(srv.Close)
	env := Env{
		Target: target.Target{Role: "decode", Host: "local", Runner: &remote.Local{Name: "local"}, URL: srv.URL},
		Args:   argspec.Values{"path": "/server_info", "fallback_path": "/get_server_info", "total_timeout": 5 * time.Second},
		Now:    time.Now,
	}
	res, err := HTTPProbe{}.Run(t.Context(), env)
	require.NoError(t, err)
	o := res.Values.(HTTPProbeOutput)
	require.True(t, o.OK)
	require.Contains(t, o.Body, `"disable_overlap_schedule": true`)
	require.Equal(t, srv.URL+"/get_server_info", o.URL)
	require.Equal(t, []string{"/server_info", "/get_server_info"}, asked)
	require.Len(t, res.Evidence, 2, "both exchanges are evidence")

	asked = nil
	env.Args = argspec.Values{"path": "/get_server_info", "fallback_path": "/nowhere"}
	_, err = HTTPProbe{}.Run(t.Context(), env)
	require.NoError(t, err)
	require.Equal(t, []string{"/get_server_info"}, asked, "no fallback when the path answers")
}
