package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Fault names accepted by POST /_sim/fault and --sim-fault.
const (
	FaultPDWedge      = "pd-wedge"
	FaultDecodeCrash  = "decode-crash"
	FaultCrash        = "crash"
	FaultRouterDown   = "router-down"
	FaultSlow         = "slow"
	FaultStaleSample  = "stale-sample"
	FaultPrefillStall = "prefill-stall"
	FaultDecodeHang   = "decode-hang"
	FaultSlowDecode   = "slow-decode"
	FaultClear        = "clear"
)

// faultRoles says which process kind each fault is injected into. "clear" and the
// generic "crash" apply to every process.
var faultRoles = map[string]string{
	FaultPDWedge:      "decode",
	FaultDecodeCrash:  "decode",
	FaultRouterDown:   "router",
	FaultSlow:         "prefill",
	FaultStaleSample:  "decode",
	FaultPrefillStall: "prefill",
	FaultDecodeHang:   "decode",
	FaultSlowDecode:   "decode",
	FaultCrash:        "",
	FaultClear:        "",
}

// FaultRole returns the role ("router", "prefill" or "decode") a fault is injected
// into, or "" when every role accepts it.
func FaultRole(name string) (string, bool) {
	r, ok := faultRoles[name]
	return r, ok
}

// Fault is the JSON body of POST /_sim/fault.
type Fault struct {
	// Name is the fault: pd-wedge, decode-crash, crash, router-down, slow,
	// stale-sample, prefill-stall, decode-hang, slow-decode or clear.
	Name string `json:"fault"`
	// Count is the size of the pd-wedge abort burst; 0 means the engine's
	// --sim-wedge-burst.
	Count int `json:"count,omitempty"`
	// ExitCode is the status a crash exits with (default 1).
	ExitCode int `json:"exit_code,omitempty"`
	// TTFT is the extra time to first token the slow fault adds to every prefill
	// (default "5s").
	TTFT string `json:"ttft,omitempty"`
	// Scrapes is how many /metrics scrapes show the stale reading (default 1).
	Scrapes int `json:"scrapes,omitempty"`
	// Value is the stale num_running_reqs reading (default 2).
	Value float64 `json:"value,omitempty"`
	// ITL is the inter-token latency the slow-decode fault gives every decode
	// iteration (default "1s").
	ITL string `json:"itl,omitempty"`
}

// ParseFault decodes and validates a fault request body, filling in defaults.
func ParseFault(body []byte) (Fault, error) {
	var f Fault
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("decode fault body: %w", err)
	}
	if _, ok := faultRoles[f.Name]; !ok {
		return f, fmt.Errorf("unknown fault %q (want pd-wedge, decode-crash, crash, router-down, slow, stale-sample, prefill-stall, decode-hang, slow-decode or clear)", f.Name)
	}
	if f.Count < 0 || f.Scrapes < 0 || f.ExitCode < 0 || f.ExitCode > 255 {
		return f, fmt.Errorf("fault %q: count, scrapes and exit_code must be non-negative (exit_code at most 255)", f.Name)
	}
	if f.ExitCode == 0 {
		f.ExitCode = 1
	}
	if f.TTFT == "" {
		f.TTFT = "5s"
	}
	if _, err := time.ParseDuration(f.TTFT); err != nil {
		return f, fmt.Errorf("fault %q: bad ttft: %w", f.Name, err)
	}
	if f.Scrapes == 0 {
		f.Scrapes = 1
	}
	if f.Value == 0 {
		f.Value = 2
	}
	if f.ITL == "" {
		f.ITL = "1s"
	}
	if d, err := time.ParseDuration(f.ITL); err != nil || d <= 0 {
		return f, fmt.Errorf("fault %q: itl must be a positive duration, got %q", f.Name, f.ITL)
	}
	return f, nil
}

// ttft returns the parsed TTFT; ParseFault has validated it.
func (f Fault) ttft() time.Duration {
	d, _ := time.ParseDuration(f.TTFT)
	return d
}

// itl returns the parsed ITL; ParseFault has validated it.
func (f Fault) itl() time.Duration {
	d, _ := time.ParseDuration(f.ITL)
	return d
}

// checkRole reports whether this fault may be injected into a process of role.
func (f Fault) checkRole(role string) error {
	want := faultRoles[f.Name]
	if want != "" && want != role {
		return fmt.Errorf("fault %q is injected into the %s, this process is the %s", f.Name, want, role)
	}
	return nil
}
