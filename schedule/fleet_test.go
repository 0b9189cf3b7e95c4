package schedule

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/chat/chattest"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/store"
)

// fleetHarness drives a fleet schedule of fleet-check over the test
// inventory's fleet: fleet-1 to fleet-4 run on this machine, fleet-5's
// runs cannot start, batch lacks the role and is left out.
type fleetHarness struct {
	*scheduleHarness
	parallel int
}

func newFleetHarness(t *testing.T, post PostPolicy, parallel int) *fleetHarness {
	t.Helper()
	h := newScheduleHarness(t, func(dir string) Config {
		return Config{Schedules: []Schedule{
			{Name: "fleet", Runbook: "fleet-check", Cron: "*/10 * * * *", Post: post,
				Deployments: "all", Parallel: parallel, Params: map[string]string{"dir": dir}},
			// The same runbook on one deployment, as a schedule without
			// deployments runs it: posted with its proposal.
			{Name: "single", Runbook: "fleet-check", Cron: "*/10 * * * *", Post: PostAlways,
				Params: map[string]string{"dir": dir, "deployment": "fleet-2"}},
		}}
	})
	// Four deployments reach the probe; fleet-5 never does.
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "total"), []byte("4\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "parallel"), []byte(strconv.Itoa(parallel)+"\n"), 0o600))
	return &fleetHarness{scheduleHarness: h, parallel: parallel}
}

func (h *fleetHarness) setDown(dep string, down bool) {
	h.t.Helper()
	f := filepath.Join(h.dir, dep+".down")
	if down {
		require.NoError(h.t, os.WriteFile(f, nil, 0o600))
	} else {
		require.NoError(h.t, os.RemoveAll(f))
	}
}

// removeEvents lets a run outside a fleet firing pass the probe's wait at
// once.
func (h *fleetHarness) removeEvents() {
	h.t.Helper()
	require.NoError(h.t, os.WriteFile(filepath.Join(h.dir, "parallel"), []byte("1\n"), 0o600))
	require.NoError(h.t, os.WriteFile(filepath.Join(h.dir, "events"), nil, 0o600))
}

// fire runs one firing of the schedule and returns its result and the
// most probes that were in flight at once.
func (h *fleetHarness) fire() (auditResult, int) {
	h.t.Helper()
	events := filepath.Join(h.dir, "events")
	require.NoError(h.t, os.WriteFile(events, nil, 0o600))
	res := h.sched.runAudit(h.t.Context(), h.entry("fleet"))
	f, err := os.Open(events)
	require.NoError(h.t, err)
	defer func() { require.NoError(h.t, f.Close()) }()
	inFlight, most, lines := 0, 0, 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		switch strings.Fields(sc.Text())[0] {
		case "start":
			inFlight++
		case "stop":
			inFlight--
		}
		most = max(most, inFlight)
	}
	require.Equal(h.t, 8, lines, "every runnable deployment's probe started and stopped once")
	return res, most
}

// A fleet audit posts one message per firing, and only for what changed,
// deployment by deployment against its own previous run: the first firing
// posts the baseline (what is wrong one by one, what is ok in one line), a
// firing with no change posts nothing, and a firing where one deployment
// changed names that one only. Every deployment's run is recorded either
// way, and at most parallel of them run at once.
func TestFleetScheduleOnChange(t *testing.T) {
	t.Parallel()
	h := newFleetHarness(t, PostOnChange, 2)
	require.Equal(t, []string{"fleet-1", "fleet-2", "fleet-3", "fleet-4", "fleet-5"}, h.entry("fleet").fleet, "batch lacks the app role")
	h.setDown("fleet-2", true)

	// Firing 1: the baseline.
	res, most := h.fire()
	require.NoError(t, res.Err)
	require.Equal(t, 2, most, "two probes at once, never more")
	require.True(t, res.Posted, res.Reason)
	require.Equal(t, store.OutcomeCritical, res.Outcome)
	require.Len(t, h.postsOf("fleet"), 1)
	first := h.postsOf("fleet")[0]
	runOf := func(res auditResult, dep string) string {
		for _, r := range res.Fleet {
			if r.Deployment == dep {
				return r.RunID
			}
		}
		t.Fatalf("no result for %s", dep)
		return ""
	}
	require.Contains(t, first, `Scheduled audit "fleet" (*/10 * * * *): first audit of 5 deployment(s), 2 not ok`)
	require.Contains(t, first, "fleet-2: first audit → critical (app_down) · run "+runOf(res, "fleet-2"))
	require.Contains(t, first, "fleet-5: first audit → error (could not run: step probe: host far: host far uses ssh transport")
	require.Contains(t, first, "First audit, ok: fleet-1, fleet-3, fleet-4")
	require.Contains(t, first, "Remediation proposed in this message's thread, one plan per deployment: bring_up on fleet-2.")
	// The plan is a reply under the fleet message, with its buttons, and
	// is the plan of fleet-2's run of this firing.
	replies := h.threadReplies(t, "first audit of 5")
	require.Len(t, replies, 1)
	require.Contains(t, replies[0].Text(), "fleet-2")
	require.NotEmpty(t, replies[0].Buttons, "the plan can be approved where it is shown")
	plans, err := h.store.ListPlans(t.Context(), store.PlanFilter{})
	require.NoError(t, err)
	require.Len(t, plans, 1)
	require.Equal(t, runOf(res, "fleet-2"), plans[0].RunID)
	fleet2, err := h.store.GetRun(t.Context(), runOf(res, "fleet-2"))
	require.NoError(t, err)
	require.NotNil(t, fleet2.Message)
	require.Equal(t, replies[0].ref, chat.Ref(*fleet2.Message), "votes update the reply that shows the plan")
	require.NotContains(t, first, "batch")
	firstRuns := map[string]string{}
	for _, r := range res.Fleet {
		require.NotEmpty(t, r.RunID, "%s: every deployment's run is recorded, the one that could not start too", r.Deployment)
		firstRuns[r.Deployment] = r.RunID
	}

	// Firing 2: nothing changed, nothing is posted.
	res, most = h.fire()
	require.NoError(t, res.Err)
	require.Equal(t, 2, most)
	require.False(t, res.Posted, res.Reason)
	require.Equal(t, "no change in 5 deployment(s)", res.Reason)
	require.Len(t, h.postsOf("fleet"), 1)

	// Firing 3: fleet-3 goes down; the one message names it only.
	h.setDown("fleet-3", true)
	second := map[string]string{}
	for _, r := range res.Fleet {
		second[r.Deployment] = r.RunID
	}
	res, most = h.fire()
	require.NoError(t, res.Err)
	require.Equal(t, 2, most)
	require.True(t, res.Posted, res.Reason)
	require.Equal(t, "1 of 5 deployment(s) changed", res.Reason)
	posts := h.postsOf("fleet")
	require.Len(t, posts, 2)
	third := posts[1]
	require.Contains(t, third, `Scheduled audit "fleet" (*/10 * * * *): 1 of 5 deployment(s) changed`)
	require.Contains(t, third, "fleet-3: ok (app_up) → critical (app_down) · run "+runOf(res, "fleet-3")+", was "+second["fleet-3"])
	require.Contains(t, third, "4 unchanged: ok (app_up) 2, critical (app_down) 1, error 1")
	for _, other := range []string{"fleet-1", "fleet-2", "fleet-4", "fleet-5"} {
		require.NotContains(t, third, other)
	}
	replies = h.threadReplies(t, "1 of 5 deployment(s) changed")
	require.Len(t, replies, 1, "only fleet-3, the one shown, gets a plan; fleet-2's still stands in the first thread")
	require.Contains(t, replies[0].Text(), "fleet-3")

	// Every run is in the store as a single scheduled run would be; the
	// ones a message named know it.
	runs, err := h.store.ListRuns(t.Context(), store.RunFilter{Trigger: store.TriggerSchedule, RequestedBy: "fleet", Limit: 100})
	require.NoError(t, err)
	require.Len(t, runs, 15)
	perDeployment := map[string]int{}
	posted := map[string]bool{}
	for _, r := range runs {
		require.Equal(t, "fleet", r.RequestedBy)
		require.Equal(t, "fleet-check", r.Runbook)
		require.Equal(t, h.dir, r.Params["dir"])
		perDeployment[r.Params["deployment"]]++
		if r.Params["deployment"] == "fleet-5" {
			require.Equal(t, store.RunFailed, r.Status)
			require.Equal(t, store.OutcomeError, r.Outcome)
		} else {
			require.Equal(t, store.RunFinished, r.Status)
		}
		if r.Message != nil {
			posted[r.ID] = true
		}
	}
	require.Equal(t, map[string]int{"fleet-1": 3, "fleet-2": 3, "fleet-3": 3, "fleet-4": 3, "fleet-5": 3}, perDeployment)
	wantPosted := map[string]bool{}
	for _, r := range res.Fleet {
		wantPosted[r.RunID] = true
	}
	for _, id := range firstRuns {
		wantPosted[id] = true
	}
	require.Equal(t, wantPosted, posted, "the runs of the two firings that posted know their message; the quiet firing's do not")
	plans, err = h.store.ListPlans(t.Context(), store.PlanFilter{})
	require.NoError(t, err)
	require.Len(t, plans, 2, "one plan per deployment shown with a fix: fleet-2 in firing 1, fleet-3 in firing 3")

	// The daily summary counts messages, not runs named in them, and
	// shows every deployment's latest state.
	sum, err := h.sched.summaryView(t.Context())
	require.NoError(t, err)
	text := sum.Text()
	require.Contains(t, text, "15 run(s): critical 4, error 3, ok 8; 4 posted", "two fleet messages and the two plans in their threads")
	require.Contains(t, text, "Latest, per deployment (5 of 5): critical 2, error 1, ok 2")

	// The same diagnosis from a single schedule is posted with its plan.
	h.removeEvents()
	single := h.sched.runAudit(t.Context(), h.entry("single"))
	require.NoError(t, single.Err)
	require.True(t, single.Posted)
	plans, err = h.store.ListPlans(t.Context(), store.PlanFilter{RunID: single.RunID})
	require.NoError(t, err)
	require.Len(t, plans, 1)
}

// threadReply is a message posted as a reply under another.
type threadReply struct {
	chat.Message
	ref chat.Ref
}

// threadReplies returns the replies posted under the fleet message whose
// text contains title.
func (h *fleetHarness) threadReplies(t *testing.T, title string) []threadReply {
	t.Helper()
	var parent *chattest.Post
	posts := h.chat.Posts()
	for i := range posts {
		if posts[i].Thread == "" && strings.Contains(posts[i].Message.Text(), title) {
			parent = &posts[i]
		}
	}
	require.NotNil(t, parent, "no message %q", title)
	var out []threadReply
	for _, p := range posts {
		if p.Thread == parent.Ref.ID {
			out = append(out, threadReply{Message: p.Last(), ref: p.Ref})
		}
	}
	return out
}

// At the default bound the four deployments that can run all run at once,
// and on_failure names the failing deployments only.
func TestFleetScheduleDefaultParallel(t *testing.T) {
	t.Parallel()
	h := newFleetHarness(t, PostOnFailure, 0)
	require.Equal(t, DefaultParallel, h.entry("fleet").Parallel)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "parallel"), []byte(strconv.Itoa(DefaultParallel)+"\n"), 0o600))
	res, most := h.fire()
	require.NoError(t, res.Err)
	require.Equal(t, DefaultParallel, most)
	require.True(t, res.Posted)
	require.Len(t, h.postsOf("fleet"), 1)
	msg := h.postsOf("fleet")[0]
	require.Contains(t, msg, "1 of 5 deployment(s) not ok")
	require.Contains(t, msg, "fleet-5: first audit → error")
	require.Contains(t, msg, "4 ok")
	for _, dep := range []string{"fleet-1", "fleet-2", "fleet-3", "fleet-4"} {
		require.NotContains(t, msg, dep)
	}

	// Fired as cron fires it, the metrics count a run per deployment and
	// one post per firing.
	h.sched.fire(t.Context(), h.entry("fleet"))
	require.NoError(t, h.disp.Idle(t.Context()))
	require.Len(t, h.postsOf("fleet"), 2)
	require.Equal(t, map[string]float64{"ok": 4, "error": 1}, byLabel(t, h, "runbot_schedule_runs_total", "outcome"))
	require.Equal(t, 1.0, gathered(t, h.reg, "runbot_schedule_posts_total"))
}

// Fleet schedules that cannot work are refused when the scheduler starts,
// each with what is wrong; a selection that runs on nothing is one of them,
// since an on_change audit of nothing stays silent for ever.
func TestNewSchedulerRefusesFleetMistakes(t *testing.T) {
	t.Parallel()
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	d := testDispatcher(t, testCatalog(t, "testdata/runbooks"), dispatch.Config{})
	fleet := &bind.Fleet{Inventory: inv}
	ok := func() Schedule {
		return Schedule{Runbook: "fleet-check", Cron: "0 3 * * *", Deployments: "fleet-*", Params: map[string]string{"dir": "/var/lib/x"}}
	}
	s, err := New(Config{Schedules: []Schedule{ok()}}, d, Deps{Fleet: fleet})
	require.NoError(t, err)
	single := ok()
	single.Deployments, single.Params["deployment"] = "", "fleet-2"
	_, err = New(Config{Schedules: []Schedule{single}}, d, Deps{Fleet: fleet})
	require.NoError(t, err, "a single schedule on a known deployment starts")
	got := s.Schedules()[0]
	require.Equal(t, "fleet-check dir=/var/lib/x deployments=fleet-*", got.Name)
	require.Equal(t, DefaultParallel, got.Parallel)
	require.Equal(t, PostOnChange, got.Post)

	for name, tc := range map[string]struct {
		mod  func(*Schedule)
		deps Deps
		want string
	}{
		"deployment param too": {func(s *Schedule) { s.Params["deployment"] = "fleet-1" }, Deps{Fleet: fleet},
			`deployments "fleet-*" and param deployment are both set: a fleet audit sets deployment per deployment; keep one`},
		"glob matches nothing": {func(s *Schedule) { s.Deployments = "db-*" }, Deps{Fleet: fleet},
			`deployments "db-*": inventory testdata/inventory.yaml has no deployment matching "db-*" (deployments: batch, fleet-1, fleet-2, fleet-3, fleet-4, fleet-5)`},
		"only deployments without the role": {func(s *Schedule) { s.Deployments = "b*" }, Deps{Fleet: fleet},
			`deployments "b*": no deployment can run runbook fleet-check: deployment batch has no role app, which runbook fleet-check targets`},
		"bad glob":  {func(s *Schedule) { s.Deployments = "fleet-[" }, Deps{Fleet: fleet}, `deployment glob "fleet-[": syntax error in pattern`},
		"parallel":  {func(s *Schedule) { s.Parallel = -1 }, Deps{Fleet: fleet}, "parallel -1: want at least 1"},
		"no fleet":  {func(*Schedule) {}, Deps{}, `deployments "fleet-*": the scheduler has no inventory to pick them from`},
		"bad param": {func(s *Schedule) { s.Params["dir"] = "relative" }, Deps{Fleet: fleet}, "param dir"},
		"no deployment param": {func(s *Schedule) {
			s.Runbook, s.Params = "service-errors", map[string]string{"host": "here", "service": "api"}
		}, Deps{Fleet: fleet}, "runbook service-errors has no deployment param to set per deployment"},
		"parallel without deployments": {func(s *Schedule) {
			s.Deployments, s.Parallel, s.Params["deployment"] = "", 2, "fleet-1"
		}, Deps{Fleet: fleet}, "parallel 2: only a fleet audit (deployments) runs in parallel"},
		"single schedule, unknown deployment": {func(s *Schedule) { s.Deployments, s.Params["deployment"] = "", "fleet-9" }, Deps{Fleet: fleet},
			`param deployment: inventory testdata/inventory.yaml has no deployment matching "fleet-9" (deployments: batch, fleet-1, fleet-2, fleet-3, fleet-4, fleet-5)`},
		"single schedule, deployment without the role": {func(s *Schedule) { s.Deployments, s.Params["deployment"] = "", "batch" }, Deps{Fleet: fleet},
			"param deployment: deployment batch has no role app, which runbook fleet-check targets"},
	} {
		sc := ok()
		tc.mod(&sc)
		_, err := New(Config{Schedules: []Schedule{sc}}, d, tc.deps)
		require.ErrorContains(t, err, tc.want, name)
	}
}

// Each policy shows and counts what it promises, deployment by deployment.
func TestPlanFleet(t *testing.T) {
	t.Parallel()
	okSig, down := "ok", "critical (app_down)"
	res := func(dep string, o store.Outcome, sig string, prev ...string) deploymentResult {
		r := deploymentResult{Deployment: dep, Outcome: o, Signature: sig}
		if len(prev) > 0 {
			r.HasPrev, r.Prev = true, prev[0]
		}
		return r
	}
	unreadable := res("d-unread", store.OutcomeOK, okSig)
	unreadable.PrevErr = errors.New("database is locked")
	results := []deploymentResult{
		res("d-same-ok", store.OutcomeOK, okSig, okSig),
		res("d-same-down", store.OutcomeCritical, down, down),
		res("d-recovered", store.OutcomeOK, okSig, down),
		res("d-broke", store.OutcomeCritical, down, okSig),
		res("d-new-ok", store.OutcomeOK, okSig),
		res("d-new-error", store.OutcomeError, "error"),
		unreadable,
	}
	names := func(rs []deploymentResult) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Deployment)
		}
		return out
	}
	for _, tc := range []struct {
		policy              PostPolicy
		shown, newOK, quiet []string
		reason              string
	}{
		{PostOnChange, []string{"d-recovered", "d-broke", "d-new-error", "d-unread"}, []string{"d-new-ok"}, []string{"d-same-ok", "d-same-down"}, "5 of 7 deployment(s) changed"},
		{PostOnFailure, []string{"d-same-down", "d-broke", "d-new-error"}, nil, []string{"d-same-ok", "d-recovered", "d-new-ok", "d-unread"}, "3 of 7 deployment(s) not ok"},
		{PostAlways, names(results), nil, nil, "posted on every run; 7 deployment(s)"},
	} {
		p := planFleet(tc.policy, results)
		require.True(t, p.Post, tc.policy)
		require.Equal(t, tc.shown, names(p.Shown), tc.policy)
		require.Equal(t, tc.newOK, names(p.NewOK), tc.policy)
		require.Equal(t, tc.quiet, names(p.Quiet), tc.policy)
		require.Equal(t, tc.reason, p.Reason, tc.policy)
	}
	quiet := []deploymentResult{res("a", store.OutcomeOK, okSig, okSig), res("b", store.OutcomeCritical, down, down)}
	require.False(t, planFleet(PostOnChange, quiet).Post, "no change, no post")
	require.False(t, planFleet(PostOnFailure, quiet[:1]).Post, "all ok, no post")
}

// byLabel sums a metric's samples by the value of one label.
func byLabel(t *testing.T, h *fleetHarness, name, label string) map[string]float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
