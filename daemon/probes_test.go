package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/slackchat"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
)

// switchable is a probe a test turns down, hangs or brings back: the unit
// under test is the loop, not what it probes (the tests below probe the
// real store and the recording Slack).
type switchable struct {
	mu   sync.Mutex
	err  error
	hang bool
}

func (s *switchable) set(err error, hang bool) { s.mu.Lock(); s.err, s.hang = err, hang; s.mu.Unlock() }

func (s *switchable) probe(ctx context.Context) error {
	s.mu.Lock()
	err, hang := s.err, s.hang
	s.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// TestReadinessFollowsProbes: /readyz and runbot_dependency_up follow the
// store probe at production intervals: down at the first failed probe
// (with its reason), down when the probe hangs past its timeout, ready
// again at the first good one.
func TestReadinessFollowsProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &switchable{}
		dep := dependency{name: "store", interval: StoreProbeInterval, timeout: storeProbeTimeout, probe: sw.probe}
		live, ready := heartbeat.New(nil), heartbeat.New(nil)
		d := &daemonParts{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.loops.Wait() }()
		d.watch(ctx, dep, ready)
		gauges := newDependencyGauges(ready, "store")
		h := healthHandlers{live: live, ready: ready}
		readyz := func() (int, string, float64) {
			rec := httptest.NewRecorder()
			h.readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
			return rec.Code, strings.TrimSpace(rec.Body.String()), testutil.ToFloat64(gauges)
		}
		synctest.Wait()
		code, body, up := readyz()
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, 1.0, up)

		sw.set(errors.New("ping store: sql: database is closed"), false)
		time.Sleep(StoreProbeInterval)
		synctest.Wait()
		code, body, up = readyz()
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "store is down: ping store: sql: database is closed", body)
		require.Equal(t, 0.0, up)

		sw.set(nil, true)
		time.Sleep(StoreProbeInterval + storeProbeTimeout)
		synctest.Wait()
		code, body, _ = readyz()
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "store is down: probe store: no answer within 2s", body)

		sw.set(nil, false)
		time.Sleep(StoreProbeInterval)
		synctest.Wait()
		code, body, up = readyz()
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, 1.0, up)
	})
}

// TestStoreProbe: the store's probe reads the real SQLite store while it
// is open and fails once it is closed.
func TestStoreProbe(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	dep := storeDependency(st)
	require.NoError(t, dep.probe(t.Context()))
	require.NoError(t, st.Close())
	require.ErrorContains(t, dep.probe(t.Context()), "ping store: sql: database is closed")
}

// TestSlackProbe: the Slack probe is auth.test through the Slack client,
// against the recording Slack; a failing auth.test fails it with Slack's
// answer and never the token.
func TestSlackProbe(t *testing.T) {
	rec := slackrec.New()
	defer rec.Close()
	t.Setenv("PROBE_BOT", "xoxb-probe-secret")
	t.Setenv("PROBE_SIGN", "signing-secret")
	sl, err := slackchat.New(slackchat.Config{
		Transport: slackchat.TransportHTTP, BotToken: secret.Ref{Env: "PROBE_BOT"}, SigningSecret: secret.Ref{Env: "PROBE_SIGN"}, APIURL: rec.APIURL(),
	}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	require.NoError(t, err)
	dep := slackDependency(sl)
	require.NoError(t, dep.probe(t.Context()))
	rec.FailNext("auth.test", slackrec.Failure{Error: "invalid_auth"})
	err = dep.probe(t.Context())
	require.ErrorContains(t, err, "slack auth.test: invalid_auth")
	require.NotContains(t, err.Error(), "xoxb-probe-secret")
	rec.FailNext("auth.test", slackrec.Failure{Status: http.StatusServiceUnavailable})
	require.Error(t, dep.probe(t.Context()))
	require.Len(t, rec.Calls("auth.test"), 3)
	require.NoError(t, dep.probe(t.Context()), "back once Slack answers")
}

var _ prometheus.Collector = (*dependencyGauges)(nil)

// TestSlackDownIsDegradedNotUnready: a Slack outage shows in /readyz and
// in runbot_dependency_up, but /readyz still answers 200 (alerts are
// still taken; their posts wait in the outbox) and the watchdog, which
// watches the live and ready monitors only, is not withheld.
func TestSlackDownIsDegradedNotUnready(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, slack := &switchable{}, &switchable{}
		live, ready, degraded := heartbeat.New(nil), heartbeat.New(nil), heartbeat.New(nil)
		d := &daemonParts{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.loops.Wait() }()
		d.watch(ctx, dependency{name: "store", interval: StoreProbeInterval, timeout: storeProbeTimeout, probe: store.probe}, ready)
		d.watch(ctx, dependency{name: "slack", interval: slackProbeInterval, timeout: slackProbeTimeout, probe: slack.probe}, degraded)
		gauges := newDependencyGauges(ready, "store").and(degraded, "slack")
		h := healthHandlers{live: live, ready: ready, degraded: degraded}
		readyz := func() (int, string) {
			rec := httptest.NewRecorder()
			h.readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
			return rec.Code, strings.TrimSpace(rec.Body.String())
		}
		synctest.Wait()
		code, body := readyz()
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, "ok", body)

		slack.set(errors.New("slack auth.test: slack server error: 503 Service Unavailable"), false)
		time.Sleep(slackProbeInterval)
		synctest.Wait()
		code, body = readyz()
		require.Equal(t, http.StatusOK, code, "Slack down is no reason to stop taking alerts")
		require.Equal(t, "ok\ndegraded: slack is down: slack auth.test: slack server error: 503 Service Unavailable (messages wait in the outbox)", body)
		require.Empty(t, joined(live, ready).Check(), "the watchdog sees nothing stuck")
		require.Equal(t, 2, testutil.CollectAndCount(gauges))
		require.Contains(t, gaugeText(t, gauges), `runbot_dependency_up{dependency="slack"} 0`)
		require.Contains(t, gaugeText(t, gauges), `runbot_dependency_up{dependency="store"} 1`)

		store.set(errors.New("ping store: sql: database is closed"), false)
		time.Sleep(StoreProbeInterval)
		synctest.Wait()
		code, body = readyz()
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "store is down: ping store: sql: database is closed", body)
	})
}

func gaugeText(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var b strings.Builder
	for _, mf := range mfs {
		_, err := expfmt.MetricFamilyToText(&b, mf)
		require.NoError(t, err)
	}
	return b.String()
}

// TestStoreProbeWrites: a store on a full filesystem still answers reads,
// but cannot record an alert; the store's probe writes, so readiness says
// so, and says it again once space is freed. It needs root, to mount a
// filesystem small enough to fill, as the e2e tests need root for their
// hosts.
func TestStoreProbeWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		// Not skipped: a skip would hide that the write probe is untested.
		t.Fatal("this test mounts a 1 MiB tmpfs to fill: run the tests as root, as CI does")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	st, err := store.Open(t.Context(), filepath.Join(dir, "runbot.db"))
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	dep := storeDependency(st)
	require.NoError(t, dep.probe(t.Context()))

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	// The last bytes: a partial chunk may still fit.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	require.NoError(t, f.Close())
	require.NoError(t, st.Ping(t.Context()), "reads still work")
	err = dep.probe(t.Context())
	require.ErrorContains(t, err, "write to store")
	require.ErrorContains(t, err, "full")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, dep.probe(t.Context()), "ready again once there is room")
}
