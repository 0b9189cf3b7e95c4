package runbooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
)

// matrixFault is one fault of the scenario matrix and the one diagnosis the
// shipped wedge runbook must give for it.
type matrixFault struct {
	name        string
	ctl         []string // sglang-sim ctl fault arguments; nil for none
	diagnosis   string
	remediation string
	// quiet faults leave the deployment serving: no critical finding, no
	// remediation, no claim that something is stuck.
	quiet bool
}

var matrixFaults = []matrixFault{
	{name: "healthy", diagnosis: "healthy", quiet: true},
	{name: "pd-wedge", ctl: []string{"pd-wedge"}, diagnosis: "pd_transfer_wedge", remediation: "disable_overlap_and_restart"},
	{name: "decode-crash", ctl: []string{"decode-crash"}, diagnosis: "decode_down"},
	{name: "router-down", ctl: []string{"router-down"}, diagnosis: "router_down"},
	{name: "slow", ctl: []string{"slow", "--ttft", "10s"}, diagnosis: "slow_but_serving", quiet: true},
	{name: "stale-sample", ctl: []string{"stale-sample", "--scrapes", "1", "--value", "2"}, diagnosis: "healthy", quiet: true},
	{name: "prefill-stall", ctl: []string{"prefill-stall"}, diagnosis: "prefill_stalled"},
	// The upstream blocked-loop hang (SGLang PRs #28039, #31072): decode's
	// fault, and the overlap schedule's known workaround.
	{name: "decode-hang", ctl: []string{"decode-hang"}, diagnosis: "decode_hung", remediation: "disable_overlap_and_restart"},
	{name: "slow-decode", ctl: []string{"slow-decode", "--itl", "1s"}, diagnosis: "slow_but_serving", quiet: true},
}

// matrixCondition is what surrounds the fault: traffic, age, log format.
type matrixCondition struct {
	name string
	up   []string // extra sglang-sim up arguments
	// load is sglang-sim load arguments for client traffic that runs from
	// before the fault until the run ends; nil for none.
	load []string
	// before runs between up and the fault (e.g. a restart); after runs
	// between the fault and the run (e.g. letting it age).
	before, after func(ctx context.Context, dir string) error
	// weight is how much of the machine the condition takes, for running
	// cells side by side.
	weight int
	// expect adjusts a fault's expected diagnosis where the condition
	// changes the world (e.g. the overlap schedule already off); nil keeps
	// it.
	expect func(matrixFault) matrixFault
	// full says the cell runs only in the full matrix (make matrix-full);
	// the covering subset in make test still has every fault under every
	// profile and knob.
	full bool
}

// overlapAlreadyOff is what an engine whose overlap schedule is off (by a
// config file or forced by SGLang, with no flag on its command line)
// changes: the burst does not wedge it, and a hang is not the overlap hang
// as far as anyone can fix it, so "disable overlap" is never proposed.
func overlapAlreadyOff(f matrixFault) matrixFault {
	switch f.name {
	case "pd-wedge":
		f.diagnosis, f.remediation, f.quiet = "healthy", "", true
	case "decode-hang":
		f.remediation = "restart_and_escalate"
	}
	return f
}

func waitFor(d time.Duration) func(context.Context, string) error {
	return func(ctx context.Context, _ string) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// olderThanStallAfter is past the runbook's default stall_after (60 s).
const olderThanStallAfter = 65 * time.Second

var matrixConditions = []matrixCondition{
	{name: "fresh", weight: 1},
	{name: "idle", before: waitFor(olderThanStallAfter), weight: 1},
	{name: "steady", load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	{name: "heavy", load: []string{"--rate", "200"}, before: waitFor(3 * time.Second), weight: 4},
	{name: "restarted", load: []string{"--rate", "5"}, before: func(ctx context.Context, dir string) error {
		if err := waitFor(3*time.Second)(ctx, dir); err != nil {
			return err
		}
		if out, err := simCmd(ctx, "ctl", "--dir", dir, "restart", "all"); err != nil {
			return fmt.Errorf("restart: %w\n%s", err, out)
		}
		return nil
	}, weight: 1},
	{name: "aged", load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), after: waitFor(olderThanStallAfter), weight: 1},
	{name: "profile-2025-mid", up: []string{"--profile", "2025-mid"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	{name: "profile-2025-late", up: []string{"--profile", "2025-late"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	// The default profile: the same cells as steady, so only in the full
	// matrix.
	{name: "profile-2026-mid", up: []string{"--profile", "2026-mid"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1, full: true},
	{name: "profile-2026-late", up: []string{"--profile", "2026-late"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	// What varies within a build: --enable-metrics not set (/metrics 404),
	// the mooncake backend's failure text, the overlap schedule off without
	// the flag, log stamps in a zone other than UTC, a 2025 router with
	// metrics off.
	{name: "metrics-off", up: []string{"--metrics", "off"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	{name: "metrics-off-2025", up: []string{"--profile", "2025-mid", "--metrics", "off"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	{name: "mooncake", up: []string{"--transfer-backend", "mooncake"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	{name: "overlap-config", up: []string{"--overlap", "config"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1, expect: overlapAlreadyOff},
	{name: "overlap-forced", up: []string{"--overlap", "forced"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1, expect: overlapAlreadyOff},
	{name: "log-zone", up: []string{"--log-tz", "Asia/Kolkata"}, load: []string{"--rate", "5"}, before: waitFor(3 * time.Second), weight: 1},
	// Other clients that give up before their answer: their aborts are in
	// the logs, and they are not this run's echoes.
	{name: "foreign-aborts", load: []string{"--rate", "4", "--timeout", "30ms", "--max-tokens", "400"}, before: waitFor(3 * time.Second), weight: 1},
}

// matrixSelected reports whether fault is one of RUNBOT_MATRIX_ONLY (a
// comma-separated list of fault names), for re-running the cells of one
// fault while working on it; unset, every fault runs.
func matrixSelected(fault string) bool {
	only := os.Getenv("RUNBOT_MATRIX_ONLY")
	return only == "" || slices.Contains(strings.Split(only, ","), fault)
}

// conditionSelected reports whether a condition runs: RUNBOT_MATRIX_CONDITIONS
// (a comma-separated list) picks conditions by name; otherwise the covering
// subset runs, or every condition with RUNBOT_MATRIX_FULL=1.
func conditionSelected(c matrixCondition) bool {
	if only := os.Getenv("RUNBOT_MATRIX_CONDITIONS"); only != "" {
		return slices.Contains(strings.Split(only, ","), c.name)
	}
	return !c.full || os.Getenv("RUNBOT_MATRIX_FULL") == "1"
}

// cellResult is what one cell of the matrix gave.
type cellResult struct {
	fault, condition string
	diagnoses        []string
	remediation      string
	verdict, total   time.Duration
	wrong            []string
}

// TestScenarioMatrix runs the shipped sglang-pd-wedge runbook, with its
// production defaults, against every fault of the simulator under every
// surrounding condition, with the simulator at its own defaults. Every cell
// must give exactly the fault's diagnosis, a report without contradictions,
// and, for a deployment that is serving, no alarm at all. How soon each
// verdict came is in the table; BenchmarkTimeToVerdict measures it.
func TestScenarioMatrix(t *testing.T) {
	cat, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	rb, err := cat.Get("sglang-pd-wedge")
	require.NoError(t, err)
	simBinary = simtest.Binary(t)

	// Cells run side by side, as many as the machine takes: each is a
	// whole deployment, its traffic and a run at production timeouts.
	const capacity = 6
	sem := make(chan int, capacity)
	for range capacity {
		sem <- 1
	}
	acquire := func(w int) {
		for range w {
			<-sem
		}
	}
	release := func(w int) {
		for range w {
			sem <- 1
		}
	}
	var mu sync.Mutex
	var results []cellResult
	var wg sync.WaitGroup
	// The heaviest cells first, so that they do not all end up together.
	conds := slices.Clone(matrixConditions)
	slices.SortStableFunc(conds, func(a, b matrixCondition) int { return b.weight - a.weight })
	for _, c := range conds {
		if !conditionSelected(c) {
			continue
		}
		for _, f := range matrixFaults {
			if !matrixSelected(f.name) {
				continue
			}
			if c.expect != nil {
				f = c.expect(f)
			}
			acquire(c.weight)
			wg.Go(func() {
				defer release(c.weight)
				r := runCell(t, rb, f, c)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			})
		}
	}
	wg.Wait()

	slices.SortFunc(results, func(a, b cellResult) int {
		return strings.Compare(a.fault+"/"+a.condition, b.fault+"/"+b.condition)
	})
	var table strings.Builder
	right := 0
	fmt.Fprintf(&table, "%-14s %-15s %-6s %-9s %-8s %s\n", "fault", "condition", "result", "verdict", "total", "diagnoses")
	for _, r := range results {
		mark := "right"
		if len(r.wrong) > 0 {
			mark = "WRONG"
		} else {
			right++
		}
		fmt.Fprintf(&table, "%-14s %-15s %-6s %-9s %-8s %s\n", r.fault, r.condition, mark,
			r.verdict.Round(100*time.Millisecond), r.total.Round(100*time.Millisecond), strings.Join(r.diagnoses, ","))
		for _, w := range r.wrong {
			fmt.Fprintf(&table, "    - %s\n", w)
		}
	}
	fmt.Fprintf(&table, "%d of %d cells right\n", right, len(results))
	// Per condition (each profile and knob is one): a build that is wrong
	// on one fault shows at a glance.
	byCond := map[string][2]int{}
	var condOrder []string
	for _, r := range results {
		n, seen := byCond[r.condition]
		if !seen {
			condOrder = append(condOrder, r.condition)
		}
		n[1]++
		if len(r.wrong) == 0 {
			n[0]++
		}
		byCond[r.condition] = n
	}
	slices.Sort(condOrder)
	for _, c := range condOrder {
		fmt.Fprintf(&table, "  %-18s %d of %d right\n", c, byCond[c][0], byCond[c][1])
	}
	t.Logf("scenario matrix (faults x conditions, simulator and runbook at defaults):\n%s", table.String())
	if path := os.Getenv("RUNBOT_MATRIX_OUT"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(table.String()), 0o644))
	}
	require.Equal(t, len(results), right, "wrong cells:\n%s", table.String())
}

func runCell(t *testing.T, rb *runbooks.Runbook, f matrixFault, c matrixCondition) cellResult {
	t.Helper()
	res := cellResult{fault: f.name, condition: c.name}
	fail := func(format string, args ...any) { res.wrong = append(res.wrong, fmt.Sprintf(format, args...)) }
	inv, stop, err := prepareCell(t.Context(), f, c)
	defer stop()
	if err != nil {
		fail("%v", err)
		return res
	}
	pool := sshrun.NewPool()
	defer func() { _ = pool.Close() }()
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "sim"})
	if err != nil {
		fail("prepare: %v", err)
		return res
	}
	var verdict []string
	var settled bool
	rep := e.Run(t.Context(), p, engine.RunOptions{Progress: func(ev engine.Event) {
		if ev.Kind == "verdict" {
			settled = true
			for _, d := range ev.Verdict {
				verdict = append(verdict, d.ID)
			}
		}
	}})
	res.diagnoses = diagnosisIDs(rep)
	res.verdict, res.total = rep.VerdictAt.Sub(rep.StartedAt), rep.FinishedAt.Sub(rep.StartedAt)
	checkCell(rb, rep, f, &res, fail)
	if settled && !slices.Equal(verdict, res.diagnoses) {
		fail("the early verdict %v differs from the complete report's %v", verdict, res.diagnoses)
	}
	return res
}

// prepareCell starts a simulated deployment at the simulator's defaults,
// with the condition's traffic and history, and injects the fault. stop
// ends the traffic and the deployment; it is safe to call after an error.
// It reports problems as errors rather than through t.Fatal, since cells
// run in goroutines of their own.
func prepareCell(ctx context.Context, f matrixFault, c matrixCondition) (inv *inventory.Inventory, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	dir, err := os.MkdirTemp("", "runbot-matrix-")
	if err != nil {
		return nil, stop, fmt.Errorf("temp dir: %w", err)
	}
	stops = append(stops, func() { _ = os.RemoveAll(dir) })
	if out, err := simCmd(ctx, append([]string{"up", "--dir", dir}, c.up...)...); err != nil {
		return nil, stop, fmt.Errorf("sglang-sim up: %w\n%s", err, out)
	}
	stops = append(stops, func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = simCmd(dctx, "down", "--dir", dir) // the deployment goes with the directory
	})
	if inv, err = inventory.Load(filepath.Join(dir, "inventory.yaml")); err != nil {
		return nil, stop, err
	}
	if c.load != nil {
		var ep map[string]string
		raw, err := os.ReadFile(filepath.Join(dir, "endpoints.json"))
		if err == nil {
			err = json.Unmarshal(raw, &ep)
		}
		if err != nil {
			return nil, stop, fmt.Errorf("read endpoints: %w", err)
		}
		lctx, cancel := context.WithCancel(ctx)
		args := append([]string{"load", "--duration", "4m", "--stream"}, c.load...)
		load := exec.CommandContext(lctx, simBinary, append(args, ep["router"])...)
		if err := load.Start(); err != nil {
			cancel()
			return nil, stop, fmt.Errorf("start load: %w", err)
		}
		stops = append(stops, func() { cancel(); _ = load.Wait() }) // killed: its exit status says so
	}
	if c.before != nil {
		if err := c.before(ctx, dir); err != nil {
			return nil, stop, err
		}
	}
	if f.ctl != nil {
		if out, err := simCmd(ctx, append([]string{"ctl", "--dir", dir, "fault"}, f.ctl...)...); err != nil {
			return nil, stop, fmt.Errorf("inject %s: %w\n%s", f.name, err, out)
		}
	}
	if c.after != nil {
		if err := c.after(ctx, dir); err != nil {
			return nil, stop, err
		}
	}
	return inv, stop, nil
}

// checkCell holds a report to what the cell expects.
func checkCell(rb *runbooks.Runbook, rep *runbooks.Report, f matrixFault, res *cellResult, fail func(string, ...any)) {
	if !slices.Equal(res.diagnoses, []string{f.diagnosis}) {
		fail("want diagnosis %s, got %v; findings %v; inconclusive %v", f.diagnosis, res.diagnoses, findingIDs(rep), inconclusiveIDs(rep))
	} else {
		res.remediation = rep.Diagnoses[0].Remediation
		if res.remediation != f.remediation {
			fail("want remediation %q, got %q", f.remediation, res.remediation)
		}
	}
	for _, x := range rep.Contradictions {
		fail("contradiction: %s", x)
	}
	if f.quiet {
		for _, fd := range rep.Findings {
			if fd.Severity == runbooks.Critical {
				fail("critical finding on a serving deployment: %s: %s", fd.ID, fd.Summary)
			}
			if claimsStuck(rb, fd.ID) {
				fail("finding %s claims something is stuck on a serving deployment: %s", fd.ID, fd.Summary)
			}
		}
		for _, d := range rep.Diagnoses {
			if d.Remediation != "" {
				fail("remediation %s proposed for a serving deployment", d.Remediation)
			}
		}
	}
	// No made-up numbers: a silence is never quoted as the log window when
	// the unit's start is known and later.
	for _, fd := range rep.Findings {
		if strings.Contains(fd.Summary, "15m0s") {
			fail("finding %s quotes the 15m log window as a measurement: %s", fd.ID, fd.Summary)
		}
	}
}

// simCmd runs sglang-sim (built by simtest.Binary) and returns its output.
func simCmd(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, simBinary, args...).CombinedOutput()
	return string(out), err
}

// simBinary is set by TestScenarioMatrix before any cell runs.
var simBinary string

func claimsStuck(rb *runbooks.Runbook, finding string) bool {
	for _, f := range rb.Findings {
		if f.ID != finding {
			continue
		}
		for _, c := range f.Claims {
			if c.Negated && (c.Fact == "decode.serving" || c.Fact == "prefill.forwarding" || c.Fact == "service.serving") {
				return true
			}
		}
	}
	return false
}

func inconclusiveIDs(rep *runbooks.Report) []string {
	var ids []string
	for _, f := range rep.Inconclusive {
		ids = append(ids, f.ID+" ("+f.Reason+")")
	}
	return ids
}
