package sim

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// runCtl implements `sglang-sim ctl --dir DIR VERB [ROLE|FAULT]`.
func runCtl(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ctl", flag.ContinueOnError)
	dir := fs.String("dir", "", "deployment directory (as given to up)")
	timeout := fs.Duration("timeout", 15*time.Second, "how long start/restart wait for /health")
	var f Fault
	fs.IntVar(&f.Count, "count", 0, "fault pd-wedge: abort burst size (default: the decode's --sim-wedge-burst)")
	fs.StringVar(&f.TTFT, "ttft", "", "fault slow: added time to first token (default 5s)")
	fs.IntVar(&f.Scrapes, "scrapes", 0, "fault stale-sample: scrapes that show the stale value (default 1)")
	fs.Float64Var(&f.Value, "value", 0, "fault stale-sample: the stale num_running_reqs (default 2)")
	fs.IntVar(&f.ExitCode, "exit-code", 0, "crash faults: exit status (default 1)")
	fs.StringVar(&f.ITL, "itl", "", "fault slow-decode: inter-token latency of every decode iteration (default 1s)")
	synthetic := fs.Bool("synthetic", false, "fault pd-wedge: let decode abort synthetic transfers instead of real requests through the router")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() < 1 {
		return errors.New("usage: sglang-sim ctl --dir DIR start|stop|restart|show|status|fault [ROLE|FAULT]")
	}
	d, err := LoadDeployment(*dir)
	if err != nil {
		return err
	}
	verb, rest := fs.Arg(0), fs.Args()[1:]
	switch verb {
	case "start", "stop", "restart":
		roles, err := targetRoles(rest)
		if err != nil {
			return err
		}
		return d.apply(ctx, verb, roles, *timeout, stdout)
	case "show":
		if len(rest) != 1 {
			return errors.New("usage: sglang-sim ctl --dir DIR show ROLE")
		}
		if err := validRole(rest[0]); err != nil {
			return err
		}
		st, err := readUnitState(d.StateFile(rest[0]))
		if err != nil {
			return err
		}
		_, err = io.WriteString(stdout, st.Show(rest[0]))
		return err
	case "status":
		return d.status(ctx, stdout)
	case "fault":
		if len(rest) != 1 {
			return errors.New("usage: sglang-sim ctl --dir DIR fault pd-wedge|decode-crash|router-down|slow|stale-sample|prefill-stall|decode-hang|slow-decode|clear")
		}
		f.Name = rest[0]
		if f.Name == FaultPDWedge && !*synthetic {
			return d.abortBurst(ctx, f.Count, stdout)
		}
		return d.injectFault(ctx, f, stdout)
	}
	return fmt.Errorf("unknown ctl verb %q (want start, stop, restart, show, status or fault)", verb)
}

// targetRoles expands "all" into every role, in start order.
func targetRoles(args []string) ([]string, error) {
	if len(args) != 1 {
		return nil, errors.New("name one role: prefill, decode, router or all")
	}
	if args[0] == "all" {
		return Roles, nil
	}
	if err := validRole(args[0]); err != nil {
		return nil, err
	}
	return args, nil
}

// apply stops and/or starts roles. Stops go in reverse start order (router first);
// starts go in start order, each waiting until the role answers /health.
func (d *Deployment) apply(ctx context.Context, verb string, roles []string, timeout time.Duration, stdout io.Writer) error {
	if verb == "stop" || verb == "restart" {
		for i := len(roles) - 1; i >= 0; i-- {
			if err := d.stopRole(roles[i]); err != nil {
				return err
			}
		}
	}
	if verb == "start" || verb == "restart" {
		for _, role := range roles {
			if err := d.startRole(ctx, role, timeout); err != nil {
				return err
			}
		}
	}
	for _, role := range roles {
		st, _ := readUnitState(d.StateFile(role))
		st = st.effective()
		if _, err := fmt.Fprintf(stdout, "%s: %s/%s pid=%d\n", role, st.ActiveState, st.SubState, st.MainPID); err != nil {
			return err
		}
	}
	return nil
}

// spawnSupervisor starts a detached supervisor for role and returns its invocation id.
func (d *Deployment) spawnSupervisor(ctx context.Context, role string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	inv := newRID()
	diag, err := os.OpenFile(d.SimLogFile(role), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("open diagnostics log: %w", err)
	}
	defer func() { _ = diag.Close() }() // the supervisor has its own copy
	// The supervisor outlives this process by design: no cancellation may stop it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), exe, "_supervise", "--dir", d.Dir, "--invocation", inv, role)
	cmd.Dir, cmd.Stdout, cmd.Stderr = d.Dir, diag, diag
	// Its own session: the role must survive the ctl or up process that started it,
	// and must not receive the terminal's signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start supervisor for %s: %w", role, err)
	}
	// Reap it should it exit while this process still runs.
	go func() { _ = cmd.Wait() }()
	return inv, nil
}

// startRole starts a role unless it already runs, and waits for its /health.
func (d *Deployment) startRole(ctx context.Context, role string, timeout time.Duration) error {
	st, err := readUnitState(d.StateFile(role))
	if err != nil {
		return err
	}
	if st.ActiveState == "active" && alive(st.MainPID) {
		return nil
	}
	// A supervisor still alive here is recording a dead process or pausing before an
	// automatic restart; the explicit start takes over from it.
	if alive(st.SupervisorPID) {
		if err := terminate(st.SupervisorPID, stopTimeout); err != nil {
			return fmt.Errorf("take over %s from its supervisor: %w", role, err)
		}
	}
	inv, err := d.spawnSupervisor(ctx, role)
	if err != nil {
		return err
	}
	return d.waitReady(ctx, role, inv, timeout)
}

// waitReady polls the unit state and then /health until the role serves.
func (d *Deployment) waitReady(ctx context.Context, role, inv string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		st, err := readUnitState(d.StateFile(role))
		if err == nil && st.Invocation == inv {
			switch st.ActiveState {
			case "failed", "inactive":
				return fmt.Errorf("%s failed to start (%s, status %d)\n%s", role, st.Result, st.ExecMainState, d.logTail(role))
			case "active":
				if resp, err := get(ctx, client, d.URL(role)+"/health"); err == nil {
					_ = resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return nil
					}
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer %s/health with 200 within %s\n%s", role, d.URL(role), timeout, d.logTail(role))
}

// stopRole stops a role through its supervisor, or directly if the supervisor is gone.
func (d *Deployment) stopRole(role string) error {
	st, err := readUnitState(d.StateFile(role))
	if err != nil {
		return err
	}
	if alive(st.SupervisorPID) {
		if err := terminate(st.SupervisorPID, stopTimeout+2*time.Second); err != nil {
			return fmt.Errorf("stop %s supervisor: %w", role, err)
		}
	}
	if alive(st.MainPID) {
		if err := terminate(st.MainPID, stopTimeout); err != nil {
			return fmt.Errorf("stop %s: %w", role, err)
		}
		st.ActiveState, st.SubState, st.MainPID, st.InactiveEnter = "inactive", "dead", 0, time.Now()
		_ = os.Remove(d.PIDFile(role))
		return writeUnitState(d.StateFile(role), st)
	}
	return nil
}

// logTail returns the last lines of a role's logs for error messages.
func (d *Deployment) logTail(role string) string {
	var b strings.Builder
	for _, p := range []string{d.LogFile(role), d.SimLogFile(role)} {
		fmt.Fprintf(&b, "--- last lines of %s ---\n", p)
		for _, l := range tailLines(p, 15) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func tailLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{"(" + err.Error() + ")"}
	}
	defer func() { _ = f.Close() }() // read only
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return lines
}

// status prints a human table of the deployment.
func (d *Deployment) status(ctx context.Context, stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if _, err := fmt.Fprintln(tw, "ROLE\tSTATE\tPID\tRESTARTS\tSINCE\tURL\tHEALTH"); err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for _, role := range Roles {
		st, err := readUnitState(d.StateFile(role))
		if err != nil {
			return err
		}
		st = st.effective()
		health := "-"
		if resp, err := get(ctx, client, d.URL(role)+"/health"); err == nil {
			_ = resp.Body.Close()
			health = fmt.Sprint(resp.StatusCode)
		} else if st.ActiveState == "active" {
			health = "unreachable"
		}
		if _, err := fmt.Fprintf(tw, "%s\t%s/%s\t%d\t%d\t%s\t%s\t%s\n", role, st.ActiveState, st.SubState, st.MainPID, st.NRestarts,
			systemdTime(st.ActiveEnter), d.URL(role), health); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// get is client.Get under ctx.
func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// post is client.Post under ctx.
func post(ctx context.Context, client *http.Client, url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	return client.Do(req)
}
