package main

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
}

func (h healthHandlers) healthz(w http.ResponseWriter, _ *http.Request) {
	report(w, h.live.Check())
}

func (h healthHandlers) readyz(w http.ResponseWriter, _ *http.Request) {
	report(w, append(h.live.Check(), h.ready.Check()...))
}

func report(w http.ResponseWriter, stuck []heartbeat.Stuck) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// A failed write means the client has gone; there is no one left to tell.
	if len(stuck) == 0 {
		_, _ = fmt.Fprintln(w, "ok")
		return
	}
	lines := make([]string, len(stuck))
	for i, s := range stuck {
		lines[i] = s.String()
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintln(w, strings.Join(lines, "\n"))
}
