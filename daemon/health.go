package daemon

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/runbot/runbot/internal/heartbeat"
)

// healthHandlers serve /healthz and /readyz from the loops' heartbeats, so
// they fail when a loop is stuck even though HTTP still answers: alive is
// not working.
type healthHandlers struct {
	live  *heartbeat.Monitor
	ready *heartbeat.Monitor
	// degraded are dependencies runbot works without, for a while: the
	// chat platform, whose posts wait in the outbox. /readyz names them
	// and still answers 200, so that a load balancer keeps sending
	// alerts, which are queued and run.
	degraded *heartbeat.Monitor
}

// healthz is liveness: it fails only for a loop that has stopped going
// round, as the systemd watchdog does. A loop whose attempts fail because
// the store is down is not dead: a liveness probe that restarted runbot
// for it would bring the store back no sooner and would cut its runs in
// flight short. /readyz says what is down.
func (h healthHandlers) healthz(w http.ResponseWriter, _ *http.Request) {
	report(w, h.live.Hung())
}

func (h healthHandlers) readyz(w http.ResponseWriter, _ *http.Request) {
	stuck := append(h.live.Check(), h.ready.Check()...)
	if len(stuck) == 0 && !h.ready.AllBeat() {
		// A loop that has not succeeded once is not stuck yet, but not
		// ready either: the daemon says READY=1 only after every one has.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintln(w, "starting: not every readiness check has succeeded yet") // the client may have gone
		return
	}
	var notes []string
	if h.degraded != nil && len(stuck) == 0 {
		for _, s := range h.degraded.Check() {
			notes = append(notes, "degraded: "+s.String()+" (messages wait in the outbox)")
		}
	}
	report(w, stuck, notes...)
}

func report(w http.ResponseWriter, stuck []heartbeat.Stuck, notes ...string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// A failed write means the client has gone; there is no one left to tell.
	if len(stuck) == 0 {
		_, _ = fmt.Fprintln(w, strings.Join(append([]string{"ok"}, notes...), "\n"))
		return
	}
	lines := make([]string, len(stuck))
	for i, s := range stuck {
		lines[i] = s.String()
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintln(w, strings.Join(lines, "\n"))
}
