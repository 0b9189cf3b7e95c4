package store_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
)

// A child is this test binary re-executed in another process: it opens the
// same database file and does what its mode says, talking to the parent over
// stdin (go-ahead lines) and stdout (results, one per line).
const (
	childEnv     = "RUNBOT_STORE_TEST_CHILD"
	childPathEnv = "RUNBOT_STORE_TEST_PATH"
	childArgEnv  = "RUNBOT_STORE_TEST_ARG"
)

type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr lockedBuffer
}

// lockedBuffer collects the child's stderr, which os/exec copies in from
// another goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startChild(t *testing.T, mode, path, arg string) *child {
	t.Helper()
	c := &child{t: t, lines: make(chan string, 1024)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childEnv+"="+mode, childPathEnv+"="+path, childArgEnv+"="+arg)
	c.cmd.Stderr = &c.stderr
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		_ = c.stdin.Close() // test cleanup; wait may have closed it already
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// next returns the child's next output line. The deadline only guards
// against a hung child; no assertion depends on timing.
func (c *child) next() string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		require.True(c.t, ok, "child exited early; stderr:\n%s", c.stderr.String())
		return l
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("child said nothing for 2 minutes; stderr:\n%s", c.stderr.String())
		return ""
	}
}

func (c *child) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.stdin, line+"\n")
	require.NoError(c.t, err)
}

// wait closes the child's stdin and waits for it to exit successfully,
// returning the lines it printed meanwhile.
func (c *child) wait() []string {
	c.t.Helper()
	require.NoError(c.t, c.stdin.Close())
	var rest []string
	for {
		l, ok := <-c.lines
		if !ok {
			break
		}
		rest = append(rest, l)
	}
	require.NoError(c.t, c.cmd.Wait(), "child failed; stderr:\n%s", c.stderr.String())
	return rest
}

// runChild is the child side. It returns the process exit code.
func runChild(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := store.Open(ctx, os.Getenv(childPathEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	arg := os.Getenv(childArgEnv)
	if err := childModes[mode](ctx, s, in, arg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var childModes = map[string]func(ctx context.Context, s *store.SQLite, in *bufio.Scanner, arg string) error{
	// apply: for each plan ID read from stdin, try approved -> applying and
	// report whether this process won the move.
	"apply": func(ctx context.Context, s *store.SQLite, in *bufio.Scanner, arg string) error {
		fmt.Println("ready")
		for in.Scan() {
			id := in.Text()
			_, err := s.TransitionPlan(ctx, store.Transition{PlanID: id, From: store.PlanApproved, To: store.PlanApplying,
				Actor: fmt.Sprintf("pid-%d", os.Getpid())})
			var conflict *store.StateConflictError
			switch {
			case err == nil:
				fmt.Println("won " + id)
			case errors.As(err, &conflict):
				fmt.Println("lost " + id)
			default:
				return err
			}
		}
		return nil
	},
	// lock: for each key read from stdin, try to take its lock for an hour
	// and report the result. Locks won are never released: the process
	// exits holding them when stdin closes.
	"lock": func(ctx context.Context, s *store.SQLite, in *bufio.Scanner, arg string) error {
		fmt.Println("ready")
		holder := fmt.Sprintf("pid-%d", os.Getpid())
		for in.Scan() {
			key := in.Text()
			_, err := s.Acquire(ctx, key, holder, time.Hour)
			var locked *store.LockedError
			switch {
			case err == nil:
				fmt.Println("won " + key + " " + holder)
			case errors.As(err, &locked):
				fmt.Println("lost " + key + " " + locked.Holder)
			default:
				return err
			}
		}
		return nil
	},
	// crash: start a run, apply a plan, claim work, then exit without
	// finishing anything, as a process that dies mid-remediation does.
	"crash": func(ctx context.Context, s *store.SQLite, in *bufio.Scanner, arg string) error {
		out := map[string]string{}
		w, _, err := s.Enqueue(ctx, store.Work{Trigger: store.TriggerAlert, Runbook: "sglang-pd-wedge", Key: "crash-" + arg})
		if err != nil {
			return err
		}
		if w, err = s.ClaimWork(ctx); err != nil {
			return err
		}
		out["work"] = w.ID
		run, err := s.CreateRun(ctx, store.Run{Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert, WorkID: w.ID})
		if err != nil {
			return err
		}
		out["run"] = run.ID
		p, _, err := s.CreatePlan(ctx, store.Plan{RunID: run.ID, Remediation: "restart-" + arg, Deployment: "dsv4",
			Hash: "h1", Body: json.RawMessage(`{}`), RequestedBy: "alertmanager"})
		if err != nil {
			return err
		}
		if _, err := s.RecordApproval(ctx, store.Approval{PlanID: p.ID, User: "U-bob", Decision: store.Approve, PlanHash: "h1"}); err != nil {
			return err
		}
		if _, err := s.TransitionPlan(ctx, store.Transition{PlanID: p.ID, From: store.PlanApproved, To: store.PlanApplying}); err != nil {
			return err
		}
		if _, err := s.StartAction(ctx, store.ActionRecord{PlanID: p.ID, Index: 0, Target: "decode@gpu-1", Action: "systemd_restart"}); err != nil {
			return err
		}
		out["plan"] = p.ID
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		// Exit without Close, without finishing: the rows stay owned by a
		// process that no longer exists.
		os.Exit(0)
		return nil
	},
	// die: claim the oldest pending work and carry it out as the bot's
	// worker does, up to the stage named by arg, then die there: "claimed"
	// (no run yet), "running" (run created), "progress" (a live report
	// stored), "reported" (the final report stored, the run not finished),
	// "finished" (the run finished, the work not yet done).
	"die": func(ctx context.Context, s *store.SQLite, in *bufio.Scanner, stage string) error {
		w, err := s.ClaimWork(ctx)
		if err != nil {
			return err
		}
		out := map[string]string{"work": w.ID}
		say := func() {
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			os.Exit(0)
		}
		if stage == "claimed" {
			say()
		}
		run, err := s.CreateRun(ctx, store.Run{Runbook: w.Runbook, Trigger: w.Trigger, WorkID: w.ID})
		if err != nil {
			return err
		}
		out["run"] = run.ID
		switch stage {
		case "running":
		case "progress":
			err = s.SetRunReport(ctx, run.ID, json.RawMessage(`{"run_id":"`+run.ID+`","steps":[{"id":"chat"}]}`))
		case "reported":
			err = s.SetRunReport(ctx, run.ID, finalReportJSON(run.ID))
		case "finished":
			_, err = s.FinishRun(ctx, run.ID, store.RunFinished, store.OutcomeCritical, finalReportJSON(run.ID))
		default:
			err = fmt.Errorf("unknown stage %q", stage)
		}
		if err != nil {
			return err
		}
		say()
		return nil
	},
	// claim: claim the oldest pending work and die holding it.
	"claim": func(ctx context.Context, s *store.SQLite, in *bufio.Scanner, arg string) error {
		w, err := s.ClaimWork(ctx)
		if err != nil {
			return err
		}
		fmt.Println(w.ID)
		os.Exit(0)
		return nil
	},
}
