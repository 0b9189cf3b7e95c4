package runbooks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// remedyEnv is a broken app in a temp dir, a store and a remediator.
type remedyEnv struct {
	dir    string
	script string
	now    time.Time
	st     store.Store
	rem    *remediation.Remediator
	p      *engine.Prepared
}

func (e *remedyEnv) clock() time.Time { return e.now }

func newRemedy(t *testing.T, app string) *remedyEnv {
	t.Helper()
	return newRemedyFrom(t, app, "testdata/valid")
}

// newRemedyFrom is newRemedy with the remedy runbook read from catalogDir.
func newRemedyFrom(t *testing.T, app, catalogDir string) *remedyEnv {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, "testdata/remedy/serve.sh", filepath.Join(dir, "serve.sh"), 0o755)
	copyFile(t, "testdata/remedy/"+app, filepath.Join(dir, "app.sh"), 0o755)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "health"), []byte("broken\n"), 0o644))
	invPath := filepath.Join(dir, "inventory.yaml")
	require.NoError(t, os.WriteFile(invPath, fmt.Appendf(nil, `
hosts:
  here: {transport: local}
deployments:
  shop:
    roles:
      app: {host: here, unit: app, launch_script: %s}
`, filepath.Join(dir, "serve.sh")), 0o600))
	inv, err := inventory.Load(invPath)
	require.NoError(t, err)

	e := &remedyEnv{dir: dir, script: filepath.Join(dir, "serve.sh"), now: time.Date(2026, 6, 18, 20, 40, 0, 0, time.UTC)}
	e.st, err = store.Open(t.Context(), filepath.Join(dir, "runbot.db"), store.WithNow(e.clock))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.st.Close() })

	cat, problems, err := catalog.Load(catalogDir)
	require.NoError(t, err)
	require.Empty(t, problems)
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	e.rem = &remediation.Remediator{Engine: eng, Store: e.st, Catalog: cat, Groups: remediation.Groups{"sre": {"alice", "bob"}}, Now: e.clock}
	rb, err := cat.Get("remedy")
	require.NoError(t, err)
	e.p, err = eng.Prepare(t.Context(), rb, map[string]string{"deployment": "shop"})
	require.NoError(t, err)
	return e
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, mode))
}

// propose runs the runbook (recorded, as alice) and proposes its fix.
func (e *remedyEnv) propose(t *testing.T) *remediation.Proposal {
	t.Helper()
	rep, err := record.RunAndRecord(t.Context(), e.rem.Engine, e.st, e.p, engine.RunOptions{}, "alice")
	require.NoError(t, err)
	require.Len(t, rep.Diagnoses, 1)
	prop, err := e.rem.Propose(t.Context(), e.p, rep, "alice")
	require.NoError(t, err)
	require.NotNil(t, prop)
	return prop
}

func (e *remedyEnv) approve(t *testing.T, prop *remediation.Proposal, user string) {
	t.Helper()
	res, err := e.rem.Vote(t.Context(), prop.Plan.ID, user, true, prop.Plan.Hash)
	require.NoError(t, err)
	require.Equal(t, store.PlanApproved, res.Plan.State)
}

func TestRemediationFixesAndVerifies(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	require.Contains(t, prop.Body.Diff(), "+    --safe-mode")
	require.Equal(t, "proposed", string(prop.Plan.State))
	e.approve(t, prop, "bob")

	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.True(t, res.Recovered, res.Message)
	require.Equal(t, store.PlanDone, res.State)
	script, _ := os.ReadFile(e.script)
	require.Contains(t, string(script), "--safe-mode")
	health, _ := os.ReadFile(filepath.Join(e.dir, "health"))
	require.Equal(t, "ok\n", string(health))

	actions, err := e.st.Actions(t.Context(), prop.Plan.ID)
	require.NoError(t, err)
	require.Len(t, actions, 2)
	for _, a := range actions {
		require.Equal(t, store.ActionDone, a.State)
	}
}

func TestFailedVerificationRollsBackByteForByte(t *testing.T) {
	e := newRemedy(t, "app-hopeless.sh")
	before, err := os.ReadFile(e.script)
	require.NoError(t, err)
	prop := e.propose(t)
	require.Equal(t, "If verification fails: undo action(s) 1, then run action(s) 2 again so the restored state takes effect.", prop.Body.RollbackPlan())
	e.approve(t, prop, "bob")
	var stages []string
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", func(ev remediation.ApplyEvent) { stages = append(stages, string(ev.Stage)+": "+ev.Detail) })
	require.NoError(t, err)
	require.False(t, res.Recovered)
	require.Equal(t, store.PlanRolledBack, res.State)
	require.Contains(t, res.Message, "1 change(s) rolled back, 1 action(s) run again so the rollback takes effect")
	require.True(t, strings.HasPrefix(res.Unverified, "diagnosis app_broken still holds: the app runs without --safe-mode; finding broken still holds: the app reports broken ([health@app] `cat "),
		"the outcome names what failed verification and the finding it holds on: %s", res.Unverified)
	require.Contains(t, res.Message, "verification failed: the symptom is still there: diagnosis app_broken still holds")
	after, err := os.ReadFile(e.script)
	require.NoError(t, err)
	require.Equal(t, before, after, "the launch script is restored byte for byte")
	// Restoring the file is only half a rollback: the app was started
	// again, so it runs with the restored flags, not the failed fix.
	running, err := os.ReadFile(filepath.Join(e.dir, "running"))
	require.NoError(t, err)
	require.Equal(t, "--port 8080 --workers 2\n", string(running))

	acts, err := e.st.Actions(t.Context(), prop.Plan.ID)
	require.NoError(t, err)
	require.Len(t, acts, 2)
	require.Equal(t, store.ActionRolledBack, acts[0].State)
	require.Equal(t, store.ActionRerun, acts[1].State)
	// The undo came before the rerun.
	require.Equal(t, []string{"rollback: rolling back", "rollback: running again"}, prefixes(stages, "rollback: ", 2))
}

// prefixes returns, of the lines starting with prefix, their first n words.
func prefixes(lines []string, prefix string, n int) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, strings.TrimSuffix(strings.Join(strings.Fields(l)[:n+1], " "), ":"))
		}
	}
	return out
}

// When an undo fails, nothing is run again (it would load a half-restored
// state), and the plan ends failed, saying the rollback is incomplete.
func TestIncompleteRollbackRunsNothingAgain(t *testing.T) {
	e := newRemedy(t, "app-hopeless-edits.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.Equal(t, store.PlanFailed, res.State)
	require.Contains(t, res.Message, "ROLLBACK INCOMPLETE: config_edit on app@here: restore")
	require.Contains(t, res.Message, "so nothing was run again after the rollback")
	script, err := os.ReadFile(e.script)
	require.NoError(t, err)
	require.Contains(t, string(script), "--safe-mode", "the file changed after runbot's edit, so it was left alone")
	require.Contains(t, string(script), "# touched by the app")
	acts, err := e.st.Actions(t.Context(), prop.Plan.ID)
	require.NoError(t, err)
	require.Equal(t, store.ActionRollbackFailed, acts[0].State)
	require.Equal(t, store.ActionDone, acts[1].State, "the restart was not run again")
}

func TestApprovalRefusals(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)

	_, err := e.rem.Vote(t.Context(), prop.Plan.ID, "mallory", true, prop.Plan.Hash)
	require.ErrorIs(t, err, remediation.ErrNotApprover)

	_, err = e.rem.Vote(t.Context(), prop.Plan.ID, "alice", true, prop.Plan.Hash)
	var refusal *store.ApprovalError
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, store.RefusedSelf, refusal.Reason, "the requester cannot approve under the two-person rule")

	_, err = e.rem.Vote(t.Context(), prop.Plan.ID, "bob", true, "some-other-hash")
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, store.RefusedStale, refusal.Reason)

	e.now = e.now.Add(16 * time.Minute)
	_, err = e.rem.Vote(t.Context(), prop.Plan.ID, "bob", true, prop.Plan.Hash)
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, store.RefusedExpired, refusal.Reason)

	// Nothing was touched by any refused vote.
	script, _ := os.ReadFile(e.script)
	require.NotContains(t, string(script), "--safe-mode")
	_, err = e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.ErrorIs(t, err, remediation.ErrNotApproved)
}

func TestPlanChangedAfterApprovalNeedsNewApproval(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	// Someone edits the launch script between approval and apply.
	f, err := os.OpenFile(e.script, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString("# edited by hand\n")
	require.NoError(t, f.Close())
	edited, _ := os.ReadFile(e.script)

	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.ErrorIs(t, err, remediation.ErrPlanChanged)
	require.Equal(t, store.PlanFailed, res.State)
	now, _ := os.ReadFile(e.script)
	require.Equal(t, edited, now, "nothing was applied")
}

func TestRecoveredOnItsOwnDoesNothing(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	require.NoError(t, os.WriteFile(filepath.Join(e.dir, "health"), []byte("ok\n"), 0o644))
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.Equal(t, store.PlanNotNeeded, res.State)
	script, _ := os.ReadFile(e.script)
	require.NotContains(t, string(script), "--safe-mode")
}

func TestSecondRemediationWhileLockedIsRefused(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	_, err := e.st.Acquire(t.Context(), "deployment/shop", "another runbot", time.Hour)
	require.NoError(t, err)
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	var locked *store.LockedError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, "another runbot", locked.Holder)
	require.Equal(t, store.PlanFailed, res.State)
	script, _ := os.ReadFile(e.script)
	require.NotContains(t, string(script), "--safe-mode")
}

func TestDoubleApplyAppliesOnce(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { _, errs[i] = e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil) })
	}
	wg.Wait()
	var conflict *store.StateConflictError
	require.NotEqual(t, (errs[0] == nil), (errs[1] == nil), "exactly one apply succeeds: %v / %v", errs[0], errs[1])
	for _, err := range errs {
		if err != nil {
			// The loser either lost the compare-and-set or found the plan
			// already applying; both refuse to apply a second time.
			require.True(t, errors.As(err, &conflict) || errors.Is(err, remediation.ErrNotApproved), "the loser is refused: %v", err)
		}
	}
	actions, err := e.st.Actions(t.Context(), prop.Plan.ID)
	require.NoError(t, err)
	require.Len(t, actions, 2, "each action ran once")
}

func TestCircuitBreakerAfterFailedFix(t *testing.T) {
	e := newRemedy(t, "app-hopeless.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.Equal(t, store.PlanRolledBack, res.State)

	require.Empty(t, prop.Body.Blocked, "nothing blocked the first plan")

	e.now = e.now.Add(time.Minute)
	prop2 := e.propose(t)
	// The plan says before anyone approves it that applying it would be
	// refused, and how to re-arm: nobody is asked to approve it.
	require.Equal(t, "the last remediation for app_broken on shop (plan "+prop.Plan.ID+") ended rolled_back; once someone has looked, re-arm it with `runbot rearm shop app_broken --as USER` or `/runbot rearm shop app_broken`, then run the runbook again for a new plan", prop2.Body.Blocked)
	require.Equal(t, prop2.Plan.Hash, prop2.Body.Hash(), "what blocked it is not part of what is approved")
	// Approved anyway (a vote through another path), Apply still refuses.
	e.approve(t, prop2, "bob")
	res, err = e.rem.Apply(t.Context(), prop2.Plan.ID, "bob", nil)
	require.ErrorIs(t, err, remediation.ErrCircuitOpen)
	require.Contains(t, err.Error(), "rearm "+prop.Plan.Deployment+" "+prop.Plan.Diagnosis, "the refusal says how to re-arm")
	require.Equal(t, store.PlanFailed, res.State)
}

// A breaker a failed fix opened stays open until someone who may approve
// that fix re-arms it; the re-arm is audited, and opens no door a second
// failure does not close again.
func TestCircuitBreakerRearm(t *testing.T) {
	e := newRemedy(t, "app-hopeless.sh")
	prop := e.propose(t)
	_, err := e.rem.Rearm(t.Context(), prop.Plan.Deployment, prop.Plan.Diagnosis, "bob")
	require.ErrorIs(t, err, remediation.ErrBreakerClosed, "nothing to re-arm before a fix failed")
	e.approve(t, prop, "bob")
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.Equal(t, store.PlanRolledBack, res.State)

	_, err = e.rem.Rearm(t.Context(), prop.Plan.Deployment, prop.Plan.Diagnosis, "mallory")
	var ae *store.ApprovalError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, store.RefusedPolicy, ae.Reason)
	require.ErrorIs(t, err, remediation.ErrMayNotRearm)
	opened, err := e.rem.Rearm(t.Context(), prop.Plan.Deployment, prop.Plan.Diagnosis, "bob")
	require.NoError(t, err)
	require.Equal(t, prop.Plan.ID, opened.ID)
	audit, err := e.st.Audit(t.Context(), store.AuditFilter{PlanID: prop.Plan.ID, Kind: remediation.AuditBreakerRearmed})
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "bob", audit[0].Actor)

	// Re-armed: the next approved fix is applied (and fails again, which
	// opens the breaker again).
	e.now = e.now.Add(time.Minute)
	prop2 := e.propose(t)
	e.approve(t, prop2, "bob")
	res, err = e.rem.Apply(t.Context(), prop2.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.Equal(t, store.PlanRolledBack, res.State)
	e.now = e.now.Add(time.Hour) // past the rate limit of 2 an hour
	prop3 := e.propose(t)
	e.approve(t, prop3, "bob")
	_, err = e.rem.Apply(t.Context(), prop3.Plan.ID, "bob", nil)
	require.ErrorIs(t, err, remediation.ErrCircuitOpen, "a second failure opens it again")
}

func TestRateLimit(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	for i := range 3 {
		// Break the app again, as if the problem kept coming back.
		copyFile(t, "testdata/remedy/serve.sh", e.script, 0o755)
		require.NoError(t, os.WriteFile(filepath.Join(e.dir, "health"), []byte("broken\n"), 0o644))
		e.now = e.now.Add(10 * time.Minute)
		prop := e.propose(t)
		e.approve(t, prop, "bob")
		res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
		if i < 2 {
			require.NoError(t, err)
			require.Equal(t, store.PlanDone, res.State)
			require.Empty(t, prop.Body.Blocked)
			continue
		}
		require.Equal(t, "enable_safe_mode already ran 2 times on shop in the last hour (max_per_hour 2); run the runbook again later for a new plan", prop.Body.Blocked,
			"the third plan says before approval that the rate limit refuses it")
		require.ErrorIs(t, err, remediation.ErrRateLimited)
	}
}

func TestApprovedButExpiredIsNotApplied(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	e.now = e.now.Add(20 * time.Minute)
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.ErrorIs(t, err, remediation.ErrApprovalExpired)
	require.Equal(t, store.PlanExpired, res.State)
	script, _ := os.ReadFile(e.script)
	require.NotContains(t, string(script), "--safe-mode")
}

// TestUnconfirmedDiagnosisIsNotApplied: when the re-check before applying
// cannot run, nothing is applied and the plan is not called "not needed".
func TestUnconfirmedDiagnosisIsNotApplied(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	e.approve(t, prop, "bob")
	// The health file becomes a FIFO nobody writes: reading it hangs, so
	// the re-check times out instead of observing anything.
	health := filepath.Join(e.dir, "health")
	require.NoError(t, os.Remove(health))
	require.NoError(t, syscall.Mkfifo(health, 0o644))
	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.ErrorIs(t, err, remediation.ErrPreconditionFailed)
	require.Equal(t, store.PlanFailed, res.State)
	script, _ := os.ReadFile(e.script)
	require.NotContains(t, string(script), "--safe-mode")
}

// TestApplyCreatesTheBackupThePlanShowed: approval takes minutes, and the
// re-made plan right before applying has a later backup name; the apply
// must still create (and record, for rollback) the one the approvers saw.
func TestApplyCreatesTheBackupThePlanShowed(t *testing.T) {
	e := newRemedy(t, "app-fixable.sh")
	prop := e.propose(t)
	var shown string
	for _, a := range prop.Body.Actions {
		if b := a.Plan.Data["backup"]; b != "" {
			shown = b
			require.Contains(t, a.Plan.Summary, "(backup "+b+")", "the plan names its backup")
		}
	}
	require.NotEmpty(t, shown)
	e.approve(t, prop, "bob")
	e.now = e.now.Add(4 * time.Minute)

	res, err := e.rem.Apply(t.Context(), prop.Plan.ID, "bob", nil)
	require.NoError(t, err)
	require.Equal(t, store.PlanDone, res.State)
	backups, err := filepath.Glob(e.script + ".runbot-bak.*")
	require.NoError(t, err)
	require.Equal(t, []string{shown}, backups, "exactly the backup the plan showed")
	actions, err := e.st.Actions(t.Context(), prop.Plan.ID)
	require.NoError(t, err)
	require.Contains(t, string(actions[0].Detail), shown, "the record names the same backup")
}

// An apply whose context ends (the lease fence stopping it, a shutdown
// past its grace) acts on no target any more: it neither rolls back nor
// runs anything again, because another replica may hold the deployment by
// then. It still writes how it ended, on a context of its own: left
// applying by a process whose lease then held after all, no other replica
// would ever take the plan over. Its message says what was left as it was.
func TestStoppedApplyActsNoMore(t *testing.T) {
	t.Parallel()
	fenced := errors.New("this replica could not renew its lease in time")
	for _, tc := range []struct {
		name string
		// app is the remedy's app; its restart (the plan's command) is
		// slow in app-slow.sh, and it never heals in app-hopeless.sh.
		app string
		// at is the stage of the apply at which the fence strikes, or ""
		// for 3 s in, in the middle of app-slow.sh's 20 s restart.
		at remediation.ApplyStage
		// message is said in the plan's end.
		message string
		// flag says the config edit stays applied.
		flag bool
	}{
		{name: "mid-action", app: "app-slow.sh", message: "STOPPED before undoing", flag: true},
		{name: "mid-verify", app: "app-fixable.sh", at: remediation.StageVerify, message: "verification was cut short", flag: true},
		// The fix did not work and its rollback begins: it undoes nothing
		// and runs nothing again once the fence has struck.
		{name: "mid-rollback", app: "app-hopeless.sh", at: remediation.StageRollback, message: "STOPPED before undoing", flag: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRemedy(t, tc.app)
			prop := e.propose(t)
			e.approve(t, prop, "bob")
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			if tc.at == "" {
				stop := time.AfterFunc(3*time.Second, func() { cancel(fenced) })
				defer stop.Stop()
			}
			res, err := e.rem.Apply(ctx, prop.Plan.ID, "bob", func(ev remediation.ApplyEvent) {
				if ev.Stage == tc.at {
					cancel(fenced)
				}
			})
			require.Error(t, err)
			require.Equal(t, store.PlanFailed, res.State, res.Message)
			require.Contains(t, res.Message, tc.message)
			require.Contains(t, res.Message, fenced.Error(), "the message names why the apply stopped")
			plan, err := e.st.GetPlan(t.Context(), prop.Plan.ID)
			require.NoError(t, err)
			require.Equal(t, store.PlanFailed, plan.State, "the end is recorded, on a context of its own")

			actions, err := e.st.Actions(t.Context(), prop.Plan.ID)
			require.NoError(t, err)
			require.NotEmpty(t, actions, "the stopped apply still shows what it did")
			for _, a := range actions {
				require.NotContains(t, []store.ActionState{store.ActionRolledBack, store.ActionRerunning, store.ActionRerun}, a.State,
					"action %d (%s) after the apply was stopped", a.Index, a.Action)
			}
			script, err := os.ReadFile(e.script)
			require.NoError(t, err)
			require.Equal(t, tc.flag, strings.Contains(string(script), "--safe-mode"), "the config edit stays as the stop left it:\n%s", script)
		})
	}
}
