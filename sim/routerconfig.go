package sim

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"
)

// prefillWorker is one --prefill URL [BOOTSTRAP_PORT] of the router.
type prefillWorker struct {
	URL           string
	BootstrapHost string
	BootstrapPort int
}

// RouterConfig is what `python -m sglang_router.launch_router --pd-disaggregation`
// is launched with, as far as the simulator models it.
type RouterConfig struct {
	PD             bool
	Prefill        []prefillWorker
	Decode         []string
	Host           string
	Port           int
	RequestTimeout time.Duration
	Faults         []string
	// Profile is the SGLang build whose router this is (--sim-profile): the 2025
	// sgl-router or the 2026 model gateway.
	Profile Profile
	// Health is the background health check of the workers (--health-check-*).
	Health HealthCheck
	// HealthCheckDisabled is --disable-health-check: every worker stays healthy.
	HealthCheckDisabled bool
}

// ParseRouterArgs parses the router's command line, warning about flags the
// simulator does not model.
func ParseRouterArgs(args []string, log *slog.Logger) (RouterConfig, error) {
	c := RouterConfig{Host: "127.0.0.1", Port: 30000}
	timeoutSecs := 1800
	var prefillErr error
	profile := ""
	interval, startupInterval, healthTimeout, failures, successes := -1, -1, -1, -1, -1
	endpoint := ""
	specs := map[string]flagSpec{
		"sim-profile":                   setString(&profile),
		"health-check-interval-secs":    setInt(&interval),
		"worker-startup-check-interval": setInt(&startupInterval),
		"health-check-timeout-secs":     setInt(&healthTimeout),
		"health-failure-threshold":      setInt(&failures),
		"health-success-threshold":      setInt(&successes),
		"health-check-endpoint":         setString(&endpoint),
		"disable-health-check":          setBool(&c.HealthCheckDisabled),
		"pd-disaggregation":             setBool(&c.PD),
		"host":                          setString(&c.Host),
		"port":                          setInt(&c.Port),
		"decode":                        setStrings(&c.Decode),
		"request-timeout-secs":          setInt(&timeoutSecs),
		"sim-fault":                     setStrings(&c.Faults),
		"prefill": {
			optional: func(next string) bool {
				if next == "none" {
					return true
				}
				_, err := strconv.Atoi(next)
				return err == nil
			},
			set: func(v []string) error {
				w, err := newPrefillWorker(v)
				if err != nil {
					prefillErr = err
					return err
				}
				c.Prefill = append(c.Prefill, w)
				return nil
			},
		},
	}
	extra, positional, err := parseTolerant(args, specs)
	if err != nil {
		return c, err
	}
	if prefillErr != nil {
		return c, prefillErr
	}
	for _, e := range extra {
		log.Warn("ignoring router flag the simulator does not model", "flag", "--"+e.Name, "value", e.Value)
	}
	for _, p := range positional {
		log.Warn("ignoring positional argument", "arg", p)
	}
	c.RequestTimeout = time.Duration(timeoutSecs) * time.Second
	if c.Profile, err = LookupProfile(profile); err != nil {
		return c, fmt.Errorf("--sim-profile: %w", err)
	}
	c.Health = c.Profile.RouterHealth
	if c.Profile.Name == Profile2025Mid && startupInterval > 0 {
		// The mid-2025 router checked its workers every --worker-startup-check-interval.
		c.Health.Interval = time.Duration(startupInterval) * time.Second
	}
	for _, o := range []struct {
		v   int
		set func(int)
	}{
		{interval, func(n int) { c.Health.Interval = time.Duration(n) * time.Second }},
		{healthTimeout, func(n int) { c.Health.Timeout = time.Duration(n) * time.Second }},
		{failures, func(n int) { c.Health.FailureThreshold = n }},
		{successes, func(n int) { c.Health.SuccessThreshold = n }},
	} {
		if o.v >= 0 {
			o.set(o.v)
		}
	}
	if endpoint != "" {
		c.Health.Endpoint = endpoint
	}
	switch {
	case c.Health.Interval <= 0 || c.Health.Timeout <= 0:
		return c, fmt.Errorf("--health-check-interval-secs and --health-check-timeout-secs must be positive")
	case c.Health.FailureThreshold < 1 || c.Health.SuccessThreshold < 1:
		return c, fmt.Errorf("--health-failure-threshold and --health-success-threshold must be at least 1")
	}
	switch {
	case !c.PD:
		return c, fmt.Errorf("the simulated router only supports --pd-disaggregation")
	case len(c.Prefill) == 0 || len(c.Decode) == 0:
		return c, fmt.Errorf("--pd-disaggregation needs at least one --prefill and one --decode worker")
	}
	for _, d := range c.Decode {
		if _, err := url.Parse(d); err != nil {
			return c, fmt.Errorf("bad --decode URL %q: %w", d, err)
		}
	}
	return c, nil
}

func newPrefillWorker(v []string) (prefillWorker, error) {
	u, err := url.Parse(v[0])
	if err != nil || u.Host == "" {
		return prefillWorker{}, fmt.Errorf("bad --prefill URL %q", v[0])
	}
	w := prefillWorker{URL: v[0], BootstrapHost: u.Hostname(), BootstrapPort: 8998}
	if len(v) > 1 && v[1] != "none" {
		if w.BootstrapPort, err = strconv.Atoi(v[1]); err != nil {
			return w, fmt.Errorf("bad bootstrap port %q: %w", v[1], err)
		}
	}
	return w, nil
}
