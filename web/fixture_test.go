package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/simtest"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// planted are the secrets the leaky-config runbook's step prints: no page
// may show any of them. The last is caught only by the extra pattern the
// sites of these tests are given, as a Slack config's redact: would be.
var planted = []string{"Planted-Pw-4711", "xoxb-1111-2222-plantedtoken", "AKIAPLANTED000000XYZ", "CORP-PLANTED-9090"}

// extraRedact is the extra redaction pattern (slack.redact in a config).
const extraRedact = `CORP-PLANTED-\d+`

// fixture is a real SQLite store holding runs made through runbot's own
// code paths: the shipped sglang-pd-wedge runbook against the simulator,
// its remediation proposed, approved and applied (with its diff, votes,
// actions and audit trail), and two runs of a runbook whose step prints
// secrets.
type fixture struct {
	path  string
	wedge store.Run
	leaky store.Run
	// other is a leaky-config run of another deployment and trigger.
	other store.Run
	// approver voted for the wedge's plan.
	approver string
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
	fixDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixDir != "" {
		_ = os.RemoveAll(fixDir)
	}
	os.Exit(code)
}

// theFixture builds the fixture once per test binary: the wedge run takes
// about half a minute.
func theFixture(t *testing.T) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = buildFixture(t) })
	require.NoError(t, fixErr)
	return fix
}

// The wedge run's params are the demo's: they keep the run short; the
// diagnosis logic is the one the production defaults run.
var wedgeParams = map[string]string{
	"deployment": "sim", "probe_timeout": "8s", "samples": "3", "sample_interval": "1s", "stall_after": "5s",
}

func buildFixture(t *testing.T) (*fixture, error) {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), 4*time.Minute, fmt.Errorf("building the web test fixture took too long"))
	defer cancel()
	var err error
	if fixDir, err = os.MkdirTemp("", "runbot-web-"); err != nil { //nolint:usetesting // one fixture for every test of the package, which outlives any one test
		return nil, err
	}
	f := &fixture{path: filepath.Join(fixDir, "runbot.db"), approver: "U0ALICE"}
	st, err := store.Open(ctx, f.path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.Close() }()

	simDir := filepath.Join(fixDir, "sim")
	bin := simtest.Binary(t)
	if out, err := exec.CommandContext(ctx, bin, "up", "--dir", simDir, "--name", "sim", "--idle-refresh", "1s", "--decode-log-interval", "4").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sglang-sim up: %w\n%s", err, out)
	}
	defer func() {
		dctx, dcancel := context.WithTimeoutCause(context.Background(), time.Minute, fmt.Errorf("sglang-sim down took too long"))
		defer dcancel()
		_ = exec.CommandContext(dctx, bin, "down", "--dir", simDir).Run()
	}()
	out, err := exec.CommandContext(ctx, bin, "ctl", "--dir", simDir, "fault", "pd-wedge").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("sglang-sim fault pd-wedge: %w\n%s", err, out)
	}
	if !strings.Contains(string(out), `"wedged":true`) {
		return nil, fmt.Errorf("sglang-sim fault pd-wedge did not wedge decode: %s", out)
	}
	// Decode's silence must outgrow stall_after, as in the demo.
	time.Sleep(6 * time.Second)

	inv, err := inventory.Load(filepath.Join(simDir, "inventory.yaml"))
	if err != nil {
		return nil, err
	}
	// The fixture runs one built-in runbook: errors in it stop the
	// fixture, warnings and other runbooks' problems are not its business.
	cat, problems, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("builtin catalog: %w", err)
	}
	if err := problemsOf(problems, "builtin:sglang-pd-wedge.yaml").Err(); err != nil {
		return nil, fmt.Errorf("sglang-pd-wedge: %w", err)
	}
	rb, err := cat.Get("sglang-pd-wedge")
	if err != nil {
		return nil, err
	}
	pool := sshrun.NewPool()
	defer func() { _ = pool.Close() }()
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: cat, Groups: remediation.Groups{"sre-oncall": {f.approver}}}
	p, err := eng.Prepare(ctx, rb, wedgeParams)
	if err != nil {
		return nil, err
	}
	rep, err := record.RunAndRecord(ctx, eng, st, p, engine.RunOptions{Trigger: store.TriggerAlert}, "alertmanager")
	if err != nil {
		return nil, err
	}
	if len(rep.Diagnoses) == 0 || rep.Diagnoses[0].ID != "pd_transfer_wedge" {
		return nil, fmt.Errorf("the wedge run diagnosed %v, want pd_transfer_wedge", rep.Diagnoses)
	}
	prop, err := rem.Propose(ctx, p, rep, "alertmanager")
	if err != nil {
		return nil, fmt.Errorf("propose: %w", err)
	}
	if prop == nil {
		return nil, errors.New("the wedge's diagnosis proposed no remediation")
	}
	if _, err := rem.Vote(ctx, prop.Plan.ID, f.approver, true, prop.Plan.Hash); err != nil {
		return nil, fmt.Errorf("vote: %w", err)
	}
	res, err := rem.Apply(ctx, prop.Plan.ID, f.approver, nil)
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	if !res.Recovered {
		return nil, fmt.Errorf("the fix did not verify: %s", res.Message)
	}
	if f.wedge, err = st.GetRun(ctx, rep.RunID); err != nil {
		return nil, err
	}

	leakyBook, problems, err := runbooks.LoadFile("testdata/runbooks/leaky-config.yaml")
	if err == nil {
		err = problems.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("leaky-config: %w", err)
	}
	local, err := inventory.Load("testdata/inventory.yaml")
	if err != nil {
		return nil, err
	}
	leng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: local, Runners: bind.LocalRunners{}}}
	record := func(deployment string, trigger store.Trigger, by string) (store.Run, error) {
		lp, err := leng.Prepare(ctx, leakyBook, map[string]string{"deployment": deployment, "host": "here"})
		if err != nil {
			return store.Run{}, err
		}
		lrep, err := record.RunAndRecord(ctx, leng, st, lp, engine.RunOptions{Trigger: trigger}, by)
		if err != nil {
			return store.Run{}, err
		}
		return st.GetRun(ctx, lrep.RunID)
	}
	if f.leaky, err = record("edge-1", store.TriggerSchedule, "nightly"); err != nil {
		return nil, err
	}
	if f.other, err = record("edge-2", store.TriggerCLI, "bob"); err != nil {
		return nil, err
	}
	return f, nil
}

// problemsOf keeps the problems of one file.
func problemsOf(ps yamlnode.Problems, file string) yamlnode.Problems {
	var out yamlnode.Problems
	for _, p := range ps {
		if p.File == file {
			out = append(out, p)
		}
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
