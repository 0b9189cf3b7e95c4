package sim

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the watchdog goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchdog drives SGLang's watchdog logic with a fake scheduler: it fires only
// while a batch is in flight and the forward counter stands still for longer than
// the timeout, and then logs on every scheduler rank before killing the process.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		active  bool
		advance bool
		fires   bool
	}{
		{"batch in flight, counter frozen", true, false, true},
		{"idle scheduler, counter frozen", false, false, false},
		{"batch in flight, counter advancing", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out syncBuffer
			cfg := defaultEngineConfig()
			cfg.Topology = Topology{TPSize: 2, DPSize: 2, DPAttention: true}
			cfg.Watchdog = WatchdogSetting{Seconds: 0.1, Given: true}
			e := &Engine{cfg: cfg, log: NewLogger(&out, EraMid2026), diag: slog.New(slog.NewTextHandler(io.Discard, nil))}
			var ct atomic.Int64
			ct.Store(7)
			var fired, killed atomic.Bool
			w := newWatchdog(e, func() (int, bool) {
				if tc.advance {
					return int(ct.Add(1)), tc.active
				}
				return int(ct.Load()), tc.active
			}, func() { fired.Store(true) })
			w.grace = 10 * time.Millisecond
			w.kill = func() { killed.Store(true) }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go w.run(ctx)
			if !tc.fires {
				time.Sleep(600 * time.Millisecond)
				require.False(t, fired.Load())
				require.False(t, killed.Load())
				require.Empty(t, out.String())
				return
			}
			require.Eventually(t, killed.Load, 2*time.Second, 5*time.Millisecond)
			require.True(t, fired.Load())
			lines := strings.Split(out.String(), "\n")
			var timeouts, pyspy []string
			for _, l := range lines {
				switch {
				case strings.Contains(l, "watchdog timeout"):
					timeouts = append(timeouts, l)
				case strings.Contains(l, "Pyspy failed to dump PID"):
					pyspy = append(pyspy, l)
				}
			}
			require.Len(t, timeouts, 2, "one line per scheduler rank:\n%s", out.String())
			require.Regexp(t, `^\[[\d-]+ [\d:]+ DP0 TP0\] Scheduler watchdog timeout \(self\.watchdog_timeout=0\.1, self\.soft=False\)$`, timeouts[0])
			require.Regexp(t, `^\[[\d-]+ [\d:]+ DP1 TP1\] Scheduler watchdog timeout`, timeouts[1])
			require.Len(t, pyspy, 2)
			require.Regexp(t, `\] Received sigquit from a child process\. It usually means the child failed\.\n$`, out.String(),
				"the parent's line comes last, after the grace period")
		})
	}
}

// TestWatchdogWording: 2025 builds log "Watchdog timeout (self.watchdog_timeout=…)"
// from Scheduler.watchdog_thread, 2026 builds "Scheduler watchdog timeout (…,
// self.soft=False)" from WatchdogRaw; the value is the float argparse made of the
// flag, or ServerArgs' int default when no flag was given.
func TestWatchdogWording(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		era  LogEra
		args []string
		want string
	}{
		{EraMid2025, nil, "Watchdog timeout (self.watchdog_timeout=300)"},
		{EraLate2025, []string{"--watchdog-timeout", "300"}, "Watchdog timeout (self.watchdog_timeout=300.0)"},
		{EraMid2026, []string{"--watchdog-timeout=300"}, "Scheduler watchdog timeout (self.watchdog_timeout=300.0, self.soft=False)"},
		{EraLate2026, []string{"--watchdog-timeout", "300", "--watchdog-timeout", "2.5"}, "Scheduler watchdog timeout (self.watchdog_timeout=2.5, self.soft=False)"},
	} {
		t.Run(tc.era.String(), func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--disaggregation-mode", "decode"}, tc.args...)
			cfg, err := ParseEngineArgs(args, slog.New(slog.NewTextHandler(io.Discard, nil)))
			require.NoError(t, err)
			require.Contains(t, cfg.ServerArgsDump(), "watchdog_timeout="+cfg.Watchdog.Repr()+",")
			var out syncBuffer
			e := &Engine{cfg: cfg, log: NewLogger(&out, tc.era)}
			(&watchdog{e: e}).logTimeout()
			require.Contains(t, out.String(), "] "+tc.want+"\n")
		})
	}
	_, err := ParseEngineArgs([]string{"--disaggregation-mode", "decode", "--watchdog-timeout", "soon"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "--watchdog-timeout")
}

func TestParseHangFaults(t *testing.T) {
	t.Parallel()
	f, err := ParseFault([]byte(`{"fault":"slow-decode"}`))
	require.NoError(t, err)
	require.Equal(t, time.Second, f.itl(), "slow-decode defaults to a clearly slow 1 s per token")
	f, err = ParseFault([]byte(`{"fault":"slow-decode","itl":"250ms"}`))
	require.NoError(t, err)
	require.Equal(t, 250*time.Millisecond, f.itl())
	for _, bad := range []string{`{"fault":"slow-decode","itl":"0s"}`, `{"fault":"slow-decode","itl":"fast"}`} {
		_, err = ParseFault([]byte(bad))
		require.Error(t, err, bad)
	}
	for name, role := range map[string]string{FaultDecodeHang: "decode", FaultSlowDecode: "decode"} {
		r, ok := FaultRole(name)
		require.True(t, ok)
		require.Equal(t, role, r)
		f, err := ParseFault([]byte(`{"fault":"` + name + `"}`))
		require.NoError(t, err)
		require.Error(t, f.checkRole("prefill"))
	}
}
