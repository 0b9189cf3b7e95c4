package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// approveAlertToken is the bearer token the tests' serve takes alerts with.
const approveAlertToken = "approve-alert-token"

// approveSite is a directory of a test: a service's state and counter
// files, its inventory (one local host) and the config files that point
// at them and at one store.
type approveSite struct {
	t      *testing.T
	runbot string
	dir    string
	db     string
	inv    string
	// login is the OS user the test runs as, whom operators: maps.
	login string
}

func newApproveSite(t *testing.T, runbot string) *approveSite {
	t.Helper()
	dir := t.TempDir()
	s := &approveSite{t: t, runbot: runbot, dir: dir, db: filepath.Join(dir, "runbot.db"), inv: filepath.Join(dir, "inventory.yaml"), login: testLogin(t)}
	require.NoError(t, os.WriteFile(s.inv, []byte("hosts:\n  here: {transport: local}\n"), 0o600))
	s.setState("broken")
	return s
}

// testLogin is the OS user the tests run as, as runbot approve finds it.
func testLogin(tb testing.TB) string {
	tb.Helper()
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	require.NoError(tb, err, "the tests' uid must be in the user database: runbot approve maps OS users")
	return u.Username
}

func (s *approveSite) setState(state string) {
	s.t.Helper()
	require.NoError(s.t, os.WriteFile(filepath.Join(s.dir, "state"), []byte(state+"\n"), 0o644))
}

// fixes counts how often the fix really ran, on the target.
func (s *approveSite) fixes() int {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, "fixes.log"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(s.t, err)
	return strings.Count(string(b), "fixed\n")
}

// config writes a serve config named name over the site's store with body
// added (operators:, listen:, alerts:, web:) and returns its path.
func (s *approveSite) config(name, body string) string {
	s.t.Helper()
	runbooks, err := filepath.Abs("testdata/approverunbooks")
	require.NoError(s.t, err)
	path := filepath.Join(s.dir, name)
	src := fmt.Sprintf("store: %s\ninventory: %s\nrunbooks: [%s]\nshutdown_grace: 5s\n%s", s.db, s.inv, runbooks, body)
	require.NoError(s.t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// propose runs a runbook of testdata/approverunbooks on the service from
// the CLI, into the site's store, as requester: the run diagnoses the
// broken service and proposes its fix, which stays proposed, as there is
// no terminal to approve it at. It returns the plan.
func (s *approveSite) propose(runbook, requester string) console.PlanDoc {
	s.t.Helper()
	_, stderr, _ := s.cli(nil, "run", runbook, "--runbooks", "testdata/approverunbooks", "-i", s.inv, "-p", "host=here", "-p", "dir="+s.dir,
		"--store", s.db, "--remediate", "--requested-by", requester)
	require.Contains(s.t, stderr, "No terminal to ask for approval")
	plans := s.plans("--store", s.db)
	require.NotEmpty(s.t, plans, stderr)
	return plans[0]
}

// plans is runbot plans --format json with args.
func (s *approveSite) plans(args ...string) []console.PlanDoc {
	s.t.Helper()
	stdout, stderr, code := s.cli(nil, append([]string{"plans", "--format", "json"}, args...)...)
	require.Equal(s.t, 0, code, stderr)
	var docs []console.PlanDoc
	require.NoError(s.t, json.Unmarshal([]byte(stdout), &docs), stdout)
	return docs
}

// plan is runbot plans PLAN --format json: the one plan, as the store
// has it now.
func (s *approveSite) plan(id string) console.PlanDoc {
	s.t.Helper()
	stdout, stderr, code := s.cli(nil, "plans", id, "--format", "json", "--store", s.db)
	require.Equal(s.t, 0, code, stderr)
	var doc console.PlanDoc
	require.NoError(s.t, json.Unmarshal([]byte(stdout), &doc), stdout)
	return doc
}

// audit is the audit trail of a plan's run, from runbot show.
func (s *approveSite) audit(runID string) []store.AuditEvent {
	s.t.Helper()
	stdout, stderr, code := s.cli(nil, "show", runID, "--format", "json", "--store", s.db)
	require.Equal(s.t, 0, code, stderr)
	var shown struct {
		Audit []store.AuditEvent `json:"audit"`
	}
	require.NoError(s.t, json.Unmarshal([]byte(stdout), &shown), stdout)
	return shown.Audit
}

// cli runs the runbot binary with env added to the test's environment and
// returns its stdout, stderr and exit code.
func (s *approveSite) cli(env []string, args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(s.runbot, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(s.t, err, &exit, stderr.String())
		code = exit.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// serve starts `runbot serve --config cfg` with env and waits until it is
// ready on port; it is stopped with SIGTERM when the test ends, and its
// log is shown when the test failed.
func (s *approveSite) serve(cfg string, port int, env ...string) *syncBuffer {
	s.t.Helper()
	cmd := exec.Command(s.runbot, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(s.t, cmd.Start())
	s.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait() // stopped by the test: its status says nothing
		if s.t.Failed() {
			s.t.Logf("runbot serve log:\n%s", logs.String())
		}
	})
	until(s.t, "runbot serve is ready", time.Minute, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	})
	return logs
}

// until polls cond; the deadline only guards against a hung test.
func until(tb testing.TB, what string, within time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		require.True(tb, time.Now().Before(deadline), "%s: gave up waiting after %s", what, within)
		time.Sleep(100 * time.Millisecond)
	}
}

// alert delivers a firing CLIFix alert to serve on port, as Alertmanager's
// webhook does.
func alertCLIFix(t *testing.T, port int) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"version": "4", "status": "firing", "receiver": "runbot", "groupKey": `{}:{alertname="CLIFix"}`,
		"alerts": []any{map[string]any{
			"status": "firing", "fingerprint": "fp-cli-fix",
			"labels":   map[string]string{"alertname": "CLIFix"},
			"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		}},
	})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/alerts/alertmanager", port), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+approveAlertToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close() // only the status matters
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestApproveWithoutSlack is the case: runbot serve with no slack:
// block takes an alert, diagnoses the broken service and proposes its fix
// (two approvals, two-person rule). runbot plans lists it; runbot approve,
// run by an OS user operators: maps to U0ALICE, records one approval (1 of
// 2), and with the OS user mapped to U0BOB (the test has one OS user, so
// bob's session is a config of his own over the same store) the second;
// serve, which alone applies, picks the approval up at its next sweep at
// the production interval, applies the fix once, verifies it and ends the
// plan done. The audit trail names both approvers, says the votes came
// from the CLI and which OS user cast them, and the fix ran exactly once,
// also after one more sweep.
func TestApproveWithoutSlack(t *testing.T) {
	runbot, _ := buildBinaries(t)
	s := newApproveSite(t, runbot)
	port := freePort(t)
	serveBody := fmt.Sprintf(`listen: 127.0.0.1:%d
alerts:
  bearer_token: {env: T_ALERT}
  routes:
    - match: {alertname: CLIFix}
      runbook: cli-fix
      params: {host: here, dir: '%s'}
operators:
  %s: U0ALICE
`, port, s.dir, s.login)
	alice := s.config("runbot.yaml", serveBody)
	bob := s.config("bob.yaml", strings.Replace(serveBody, ": U0ALICE", ": U0BOB", 1))
	logs := s.serve(alice, port, "T_ALERT="+approveAlertToken)
	env := []string{"RUNBOT_CONFIG=" + alice}

	alertCLIFix(t, port)
	var plan console.PlanDoc
	until(t, "serve proposes the fix", time.Minute, func() bool {
		plans := s.plans("--config", alice)
		if len(plans) == 0 {
			return false
		}
		plan = plans[0]
		return true
	})
	require.Contains(t, logs.String(), "remediation proposed")
	require.Equal(t, "cli-fix", plan.Runbook)
	require.Equal(t, store.PlanProposed, plan.State)
	require.Equal(t, "alertmanager", plan.RequestedBy)

	stdout, stderr, code := s.cli(env, "plans")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "PLAN")
	line := lineWith(t, stdout, plan.PlanID)
	for _, want := range []string{plan.RunID, "cli-fix/fix", "host/here", "needs_fix", "proposed", "0 of 2", "U0ALICE,U0BOB (two-person: not alertmanager)"} {
		require.Contains(t, line, want)
	}

	stdout, stderr, code = s.cli(env, "approve", plan.PlanID, "--hash", plan.Hash[:12])
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "Proposed remediation fix for needs_fix on host/here (plan "+plan.PlanID+", hash "+plan.Hash[:12]+")")
	require.Contains(t, stdout, "echo fixed >> "+s.dir+"/fixes.log")
	require.Contains(t, stdout, "Voting approve as U0ALICE (OS user "+s.login+", operators: of "+alice+")")
	require.Contains(t, stdout, "Vote recorded: 1 of 2 approvals")
	require.Equal(t, store.PlanProposed, s.plan(plan.PlanID).State)
	stdout, _, _ = s.cli(env, "plans")
	require.Contains(t, lineWith(t, stdout, plan.PlanID), "1 of 2")
	require.Zero(t, s.fixes(), "one approval of two applies nothing")

	stdout, stderr, code = s.cli([]string{"RUNBOT_CONFIG=" + bob}, "approve", plan.PlanID)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	require.Contains(t, stdout, "Approved: plan "+plan.PlanID+" is approved (2 of 2). runbot serve applies it at its next sweep, within 10s")

	until(t, "serve applies the approved fix", store.DefaultRecoveryInterval+time.Minute, func() bool {
		return s.plan(plan.PlanID).State.Final()
	})
	require.Equal(t, store.PlanDone, s.plan(plan.PlanID).State, "applied and verified")
	require.Contains(t, logs.String(), "applying a plan approved from the cli")
	state, err := os.ReadFile(filepath.Join(s.dir, "state"))
	require.NoError(t, err)
	require.Equal(t, "ok\n", string(state))
	require.Equal(t, 1, s.fixes())

	audit := s.audit(plan.RunID)
	var approvals, sources, claims []store.AuditEvent
	for _, e := range audit {
		switch {
		case e.PlanID != plan.PlanID:
		case e.Kind == store.AuditApproval:
			approvals = append(approvals, e)
		case e.Kind == remediation.AuditVoteSource:
			sources = append(sources, e)
		case e.Kind == store.AuditPlanState:
			var move struct{ To store.PlanState }
			require.NoError(t, json.Unmarshal(e.Detail, &move))
			if move.To == store.PlanApplying {
				claims = append(claims, e)
			}
		}
	}
	require.Len(t, approvals, 2)
	require.Equal(t, "U0ALICE", approvals[0].Actor)
	require.Equal(t, "U0BOB", approvals[1].Actor)
	require.Len(t, sources, 2)
	for i, want := range []struct{ actor, outcome string }{{"U0ALICE", remediation.OutcomeCounted}, {"U0BOB", remediation.OutcomeApproved}} {
		require.Equal(t, want.actor, sources[i].Actor)
		var vs remediation.VoteSource
		require.NoError(t, json.Unmarshal(sources[i].Detail, &vs))
		require.Equal(t, remediation.VoteSource{Source: remediation.Source{Channel: remediation.ChannelCLI, Login: s.login},
			Decision: store.Approve, PlanHash: plan.Hash, Outcome: want.outcome}, vs)
	}
	require.Len(t, claims, 1, "one apply")
	require.Equal(t, "U0BOB", claims[0].Actor, "applied as the CLI approver whose vote decided it")

	// Another sweep finds nothing to apply: the fix ran once.
	time.Sleep(store.DefaultRecoveryInterval + 2*time.Second)
	require.Equal(t, 1, s.fixes(), "the fix ran exactly once")
	require.Equal(t, store.PlanDone, s.plan(plan.PlanID).State)
	stdout, _, _ = s.cli(env, "plans", "--all")
	line = lineWith(t, stdout, plan.PlanID)
	require.Contains(t, line, "done")
	require.Contains(t, line, "2 of 2")
}

// lineWith returns the line of out that holds s.
func lineWith(tb testing.TB, out, s string) string {
	tb.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	require.Failf(tb, "no line holds "+s, "output:\n%s", out)
	return ""
}

// Every vote runbot approve refuses exits 1 with the reason on stderr and
// changes nothing: the plan stays as it was, with no approval, and nothing
// is applied. Refused votes the policy decides are audited as a click's
// are, with where they came from.
func TestApproveRefusals(t *testing.T) {
	runbot, _ := buildBinaries(t)
	s := newApproveSite(t, runbot)
	mapped := func(identity string) string {
		return s.config("runbot-"+identity+".yaml", fmt.Sprintf("operators:\n  %s: %s\n", s.login, identity))
	}
	bob, alice, mallory := mapped("U0BOB"), mapped("U0ALICE"), mapped("U0MALLORY")
	someoneElse := s.config("someone-else.yaml", "operators:\n  someone-else: U0BOB\n")
	none := s.config("none.yaml", "")
	// Asked for by U0ALICE, who may approve but for the two-person rule.
	plan := s.propose("cli-fix", "U0ALICE")

	type refusal struct {
		name string
		env  []string
		args []string
		want string
		// audited: the policy refused it, and the audit log says so.
		audited bool
	}
	cases := []refusal{
		{name: "no config", args: []string{"approve", plan.PlanID}, want: "approve needs runbot serve's config: give --config FILE or set RUNBOT_CONFIG"},
		{name: "OS user not in operators", args: []string{"approve", plan.PlanID, "--config", someoneElse},
			want: fmt.Sprintf(`approve refused: %s:6:3: operators: has no entry for OS user %q, so it may not vote from the CLI`, someoneElse, s.login)},
		{name: "no operators at all", args: []string{"deny", plan.PlanID, "--config", none},
			want: fmt.Sprintf(`deny refused: %s: no operators: mapping, so OS user %q may not vote from the CLI`, none, s.login)},
		{name: "not an approver", args: []string{"approve", plan.PlanID, "--config", mallory},
			want: "approve refused: U0MALLORY (OS user " + s.login + ") is not an approver of plan " + plan.PlanID + " (approvers: U0ALICE, U0BOB); nothing was changed", audited: true},
		{name: "the requester under the two-person rule", args: []string{"approve", plan.PlanID, "--config", alice},
			want: "approve refused: the two-person rule applies: U0ALICE requested run " + plan.RunID + " and cannot approve its remediation; another approver has to", audited: true},
		{name: "another hash than reviewed", args: []string{"approve", plan.PlanID, "--config", bob, "--hash", "00000000"},
			want: "approve refused: plan " + plan.PlanID + " has hash " + plan.Hash[:12] + ", not the 00000000 given with --hash: it is not the plan you reviewed; nothing was changed"},
		{name: "a hash too short to pin", args: []string{"approve", plan.PlanID, "--config", bob, "--hash", plan.Hash[:4]},
			want: "--hash \"" + plan.Hash[:4] + "\": give at least 8 characters of the plan's hash"},
		{name: "no such plan", args: []string{"approve", "p-20200101-000000-000000", "--config", bob},
			want: "approve refused: no plan p-20200101-000000-000000 in runbot serve's store"},
		{name: "two stores", args: []string{"approve", plan.PlanID, "--config", bob, "--store", filepath.Join(s.dir, "other.db")},
			want: "--store and --config both name a store"},
	}
	if os.Getuid() == 0 {
		if nobody, err := user.Lookup("nobody"); err == nil {
			// Through sudo the operator is who ran sudo, not root: root's
			// own mapping is not theirs.
			cases = append(cases, refusal{name: "sudo by an unmapped user", env: []string{"SUDO_UID=" + nobody.Uid, "SUDO_USER=nobody"},
				args: []string{"approve", plan.PlanID, "--config", bob},
				want: fmt.Sprintf(`approve refused: %s:6:3: operators: has no entry for OS user "nobody"`, bob)})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.audit(plan.RunID))
			stdout, stderr, code := s.cli(append([]string{"RUNBOT_CONFIG="}, tc.env...), tc.args...)
			require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stdout, "Vote recorded")
			got := s.plan(plan.PlanID)
			require.Equal(t, store.PlanProposed, got.State, "nothing changed")
			require.Zero(t, got.Approvals)
			after := s.audit(plan.RunID)
			if !tc.audited {
				require.Len(t, after, before, "refused before any vote: nothing is written")
				return
			}
			require.Len(t, after, before+2, "the store's refusal and where the vote came from")
			require.Equal(t, store.AuditApprovalRefused, after[before].Kind)
			require.Equal(t, remediation.AuditVoteSource, after[before+1].Kind)
			var vs remediation.VoteSource
			require.NoError(t, json.Unmarshal(after[before+1].Detail, &vs))
			require.Equal(t, remediation.OutcomeRefused, vs.Outcome)
			require.Equal(t, remediation.Source{Channel: remediation.ChannelCLI, Login: s.login}, vs.Source)
		})
	}
	require.Zero(t, s.fixes(), "no refused vote applied anything")

	t.Run("expired", func(t *testing.T) {
		// The test is about expiry: cli-fix-brief's window is a second.
		brief := s.propose("cli-fix-brief", "U0BOB")
		time.Sleep(1500 * time.Millisecond)
		stdout, stderr, code := s.cli([]string{"RUNBOT_CONFIG=" + alice}, "approve", brief.PlanID)
		require.Equal(t, 1, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Contains(t, stderr, "approve refused: the approval window of plan "+brief.PlanID+" closed at ")
		got := s.plan(brief.PlanID)
		require.Equal(t, store.PlanExpired, got.State, "an expired plan is never approved")
		require.Zero(t, got.Approvals)
		require.Zero(t, s.fixes())
	})

	t.Run("deny, then no more votes", func(t *testing.T) {
		plan := s.propose("cli-fix", "U0ALICE")
		stdout, stderr, code := s.cli([]string{"RUNBOT_CONFIG=" + bob}, "deny", plan.PlanID)
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Contains(t, stdout, "Denied: plan "+plan.PlanID+" is denied; it will not be applied.")
		require.Equal(t, store.PlanDenied, s.plan(plan.PlanID).State)
		_, stderr, code = s.cli([]string{"RUNBOT_CONFIG=" + bob}, "approve", plan.PlanID)
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "approve refused: plan "+plan.PlanID+" is denied; votes are no longer taken")
		require.Zero(t, s.fixes())
	})
}
