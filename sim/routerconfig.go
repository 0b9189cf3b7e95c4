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
}

// ParseRouterArgs parses the router's command line, warning about flags the
// simulator does not model.
func ParseRouterArgs(args []string, log *slog.Logger) (RouterConfig, error) {
	c := RouterConfig{Host: "127.0.0.1", Port: 30000}
	timeoutSecs := 1800
	var prefillErr error
	specs := map[string]flagSpec{
		"pd-disaggregation":    setBool(&c.PD),
		"host":                 setString(&c.Host),
		"port":                 setInt(&c.Port),
		"decode":               setStrings(&c.Decode),
		"request-timeout-secs": setInt(&timeoutSecs),
		"sim-fault":            setStrings(&c.Faults),
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
