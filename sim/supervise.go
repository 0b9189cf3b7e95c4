package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// stopTimeout is how long a role gets to exit after SIGTERM before SIGKILL, like
// systemd's TimeoutStopSec.
const stopTimeout = 5 * time.Second

// runSupervise implements the hidden `sglang-sim _supervise --dir DIR --invocation
// ID ROLE`. It is the simulator's stand-in for systemd: a detached process (its own
// session) that starts the role's launch script, records MainPID and the unit
// state, waits for the process, records how it ended, and restarts it on failure
// when the deployment's Restart policy asks for that.
func runSupervise(args []string) error {
	fs := flag.NewFlagSet("_supervise", flag.ContinueOnError)
	dir := fs.String("dir", "", "deployment directory")
	inv := fs.String("invocation", "", "invocation id")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: sglang-sim _supervise --dir DIR --invocation ID ROLE")
	}
	role := fs.Arg(0)
	if err := validRole(role); err != nil {
		return err
	}
	d, err := LoadDeployment(*dir)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	st := UnitState{Invocation: *inv, SupervisorPID: os.Getpid(), ActiveState: "activating", SubState: "start", Result: "success"}
	for {
		stopping, err := superviseOnce(d, role, &st, sigs)
		if err != nil {
			st.ActiveState, st.SubState, st.Result = "failed", "failed", "resources"
			_ = writeUnitState(d.StateFile(role), st)
			return err
		}
		if stopping || st.ActiveState != "failed" || d.Restart != "on-failure" {
			return nil
		}
		// Restart=on-failure with RestartSec=100ms; a stop request during the pause wins.
		select {
		case <-sigs:
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		st.NRestarts++
	}
}

// superviseOnce runs the role's script once and records its life in st. It reports
// whether the process ended because a stop was requested.
func superviseOnce(d *Deployment, role string, st *UnitState, sigs <-chan os.Signal) (bool, error) {
	out, err := os.OpenFile(d.LogFile(role), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return false, fmt.Errorf("open log: %w", err)
	}
	errOut, err := os.OpenFile(d.SimLogFile(role), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		_ = out.Close()
		return false, fmt.Errorf("open diagnostics log: %w", err)
	}
	// The role's life is the supervisor's business: it stops it with
	// signals, as systemd does, and no context may cut it short.
	cmd := exec.CommandContext(context.Background(), "/bin/bash", d.Script(role))
	cmd.Dir, cmd.Stdout, cmd.Stderr = d.Dir, out, errOut
	err = cmd.Start()
	_ = out.Close()
	_ = errOut.Close()
	if err != nil {
		return false, fmt.Errorf("start %s: %w", d.Script(role), err)
	}
	pid := cmd.Process.Pid
	st.MainPID, st.ExecMainPID, st.ExecMainCode, st.ExecMainState = pid, pid, 0, 0
	st.ActiveState, st.SubState, st.Result, st.ActiveEnter = "active", "running", "success", time.Now()
	if err := writeUnitState(d.StateFile(role), *st); err != nil {
		return false, err
	}
	_ = os.WriteFile(d.PIDFile(role), []byte(strconv.Itoa(pid)+"\n"), 0o644)

	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopping := false
	var kill <-chan time.Time
wait:
	for {
		select {
		case <-sigs:
			if !stopping {
				stopping = true
				st.ActiveState, st.SubState = "deactivating", "stop-sigterm"
				_ = writeUnitState(d.StateFile(role), *st)
				_ = syscall.Kill(pid, syscall.SIGTERM)
				kill = time.After(stopTimeout)
			}
		case <-kill:
			_ = syscall.Kill(pid, syscall.SIGKILL)
		case <-done:
			break wait
		}
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	st.ExecMainCode, st.ExecMainState = 1, ws.ExitStatus() // CLD_EXITED
	if ws.Signaled() {
		st.ExecMainCode, st.ExecMainState = 2, int(ws.Signal()) // CLD_KILLED
	}
	st.MainPID, st.InactiveEnter = 0, time.Now()
	clean := st.ExecMainState == 0 || (ws.Signaled() && stopping && ws.Signal() == syscall.SIGTERM)
	switch {
	case clean:
		st.ActiveState, st.SubState, st.Result = "inactive", "dead", "success"
	case ws.Signaled():
		st.ActiveState, st.SubState, st.Result = "failed", "failed", "signal"
	default:
		st.ActiveState, st.SubState, st.Result = "failed", "failed", "exit-code"
	}
	_ = os.Remove(d.PIDFile(role))
	return stopping, writeUnitState(d.StateFile(role), *st)
}
