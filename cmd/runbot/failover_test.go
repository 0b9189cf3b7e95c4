package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

const (
	failoverSigning  = "failover-signing-secret"
	failoverAlertTok = "failover-alert-token"
	failoverApprover = "U0APP"
	// failoverKillsEnv sets how many randomized kill points the failover
	// test goes through; the default keeps `go test` within minutes.
	failoverKillsEnv     = "RUNBOT_FAILOVER_KILLS"
	failoverDefaultKills = 3
)

// cluster is `runbot serve` replicas sharing one store (a PostgreSQL
// database, or a SQLite file for a single replica), the recording Slack
// and a directory of service state files.
type cluster struct {
	t      testing.TB
	runbot string
	rec    *slackrec.Recorder
	// location is the store every replica is given: a postgres:// URL or
	// a SQLite path.
	location string
	dir      string
	replicas []*replica
	st       store.Store
	// http keeps connections to the replicas open between deliveries, as
	// Alertmanager does; the default client keeps only two per replica,
	// which would make a storm of senders a storm of TCP handshakes.
	http *http.Client
}

// replica is one `runbot serve` process, restartable on its port.
type replica struct {
	name string
	cfg  string
	port int
	// location is the store as this replica reaches it.
	location string
	cmd      *exec.Cmd
	logs     *syncBuffer
	// old keeps the logs of the processes killed before.
	old strings.Builder
}

// newCluster starts n replicas on a new PostgreSQL database; hosts are
// the services the test uses, each a local host of its own.
func newCluster(tb testing.TB, n int, hosts []string) *cluster {
	tb.Helper()
	return newClusterOn(tb, n, hosts, storetest.PostgresDatabase(tb))
}

// newClusterOn starts n replicas on the store at location, for the
// benchmark that compares PostgreSQL with SQLite. A replica with a
// replicaLocations entry reaches the same store there instead (through a
// proxy the test can cut).
func newClusterOn(tb testing.TB, n int, hosts []string, location string, replicaLocations ...string) *cluster {
	tb.Helper()
	return newClusterFrom(tb, clusterSpec{replicas: n, hosts: hosts, location: location, replicaLocations: replicaLocations})
}

// clusterSpec is the cluster newClusterFrom starts.
type clusterSpec struct {
	replicas int
	// hosts are the services the test uses, each a local host of its own.
	hosts []string
	// inventory adds hosts of other kinds: each name's inventory entry as
	// a YAML flow mapping (an SSH host, say).
	inventory map[string]string
	location  string
	// replicaLocations, by replica, is where a replica reaches the store
	// instead of location.
	replicaLocations []string
	// extra is appended to every replica's config (schedules:, say).
	extra string
}

// newClusterFrom starts the cluster spec describes.
func newClusterFrom(tb testing.TB, spec clusterSpec) *cluster {
	tb.Helper()
	n, hosts, location, replicaLocations := spec.replicas, spec.hosts, spec.location, spec.replicaLocations
	runbot, _ := buildBinaries(tb)
	c := &cluster{t: tb, runbot: runbot, rec: slackrec.New(), location: location, dir: tb.TempDir(),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}}
	tb.Cleanup(c.http.CloseIdleConnections)
	tb.Cleanup(c.rec.Close)
	abs, err := filepath.Abs("testdata")
	require.NoError(tb, err)
	inv := filepath.Join(c.dir, "inventory.yaml")
	var hostLines strings.Builder
	hostLines.WriteString("hosts:\n")
	for _, h := range hosts {
		fmt.Fprintf(&hostLines, "  %s: {transport: local}\n", h)
	}
	for _, h := range slices.Sorted(maps.Keys(spec.inventory)) {
		fmt.Fprintf(&hostLines, "  %s: %s\n", h, spec.inventory[h])
	}
	require.NoError(tb, os.WriteFile(inv, []byte(hostLines.String()), 0o600))
	for i := range n {
		r := &replica{name: fmt.Sprintf("replica-%d", i), port: freePort(tb), location: location}
		if i < len(replicaLocations) {
			r.location = replicaLocations[i]
		}
		r.cfg = filepath.Join(c.dir, r.name+".yaml")
		cfg := fmt.Sprintf(`
listen: 127.0.0.1:%d
store: {env: T_STORE}
inventory: %s
runbooks: [%s/failoverrunbooks]
shutdown_grace: 2s
log: {format: text, level: info}
slack:
  mode: http
  bot_token: {env: T_BOT}
  signing_secret: {env: T_SIGN}
  channel: C0OPS
  api_url: %s
  authorize:
    - {runbooks: ["*"], users: [%s]}
alerts:
  bearer_token: {env: T_ALERT}
  routes:
    - match: {alertname: FailoverTest}
      runbook: failover
      params: {svc: '{{ .labels.svc }}', host: '{{ .labels.host }}', dir: '%s'}
%s`, r.port, inv, abs, c.rec.APIURL(), failoverApprover, c.dir, spec.extra)
		require.NoError(tb, os.WriteFile(r.cfg, []byte(cfg), 0o600))
		c.replicas = append(c.replicas, r)
	}
	st, err := store.OpenURL(tb.Context(), readerLocation(tb, location), store.WithOwner("failover-test"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() }) // a reader; nothing to lose
	c.st = st
	tb.Cleanup(func() {
		for _, r := range c.replicas {
			if r.cmd != nil && r.cmd.ProcessState == nil {
				_ = r.cmd.Process.Signal(syscall.SIGTERM)
				_ = r.cmd.Wait()
			}
			if tb.Failed() && r.logs != nil {
				tb.Logf("%s log:\n%s%s", r.name, r.old.String(), r.logs.String())
			}
		}
	})
	for _, r := range c.replicas {
		c.start(r)
	}
	return c
}

// readerLocation is the location the test's own store reads from: on
// PostgreSQL under an application name of its own, so that the benchmark
// tells its connections apart from the replicas'.
func readerLocation(tb testing.TB, location string) string {
	tb.Helper()
	if !strings.HasPrefix(location, "postgres") {
		return location
	}
	u, err := url.Parse(location)
	require.NoError(tb, err)
	q := u.Query()
	q.Set("application_name", "runbot-test-reader")
	u.RawQuery = q.Encode()
	return u.String()
}

// start starts a replica's serve process and waits until it is ready.
func (c *cluster) start(r *replica) {
	c.t.Helper()
	if r.logs != nil {
		r.old.WriteString(r.logs.String())
	}
	r.cmd = exec.Command(c.runbot, "serve", "--config", r.cfg)
	r.cmd.Env = append(os.Environ(), "T_STORE="+r.location, "T_BOT=xoxb-test", "T_SIGN="+failoverSigning, "T_ALERT="+failoverAlertTok)
	r.logs = &syncBuffer{}
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	require.NoError(c.t, r.cmd.Start())
	c.until(r.name+" is ready", time.Minute, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close() // only the status matters
		return resp.StatusCode == http.StatusOK
	})
}

// kill ends a replica as a crash does: SIGKILL, nothing cleaned up.
func (c *cluster) kill(r *replica) {
	c.t.Helper()
	require.NoError(c.t, r.cmd.Process.Signal(syscall.SIGKILL))
	_ = r.cmd.Wait() // killed: the exit status says so
}

// until polls cond; the deadline only guards against a hung test.
func (c *cluster) until(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		require.True(c.t, time.Now().Before(deadline), "%s: gave up waiting after %s", what, within)
		time.Sleep(100 * time.Millisecond)
	}
}

// setState writes a service's state file: "broken" makes its run propose
// a restart, "ok" makes it a quick healthy run.
func (c *cluster) setState(svc, state string) {
	c.t.Helper()
	require.NoError(c.t, os.WriteFile(filepath.Join(c.dir, svc+".state"), []byte(state+"\n"), 0o644))
}

// blockRestart makes svc's restart, started already, block before it
// ends: the restart sleeps 2 s, then writes "ok" to the state file, which
// becomes a FIFO nobody reads, so that the write waits with the session
// and the deployment lock held. It returns whether the restart's command
// still runs on the target (host processes: the targets are this host).
func (c *cluster) blockRestart(svc string) (acting func() bool) {
	c.t.Helper()
	state := filepath.Join(c.dir, svc+".state")
	require.NoError(c.t, os.Remove(state))
	require.NoError(c.t, syscall.Mkfifo(state, 0o644))
	return func() bool {
		return exec.Command("pgrep", "-f", filepath.Join(c.dir, svc+".restarts")).Run() == nil
	}
}

// restarts counts the restarts a service really got.
func (c *cluster) restarts(svc string) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, svc+".restarts"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(c.t, err)
	return strings.Count(string(b), "restart\n")
}

// alert delivers a firing FailoverTest alert for svc to replica r, as
// Alertmanager's webhook does, and returns the HTTP status (0 when the
// replica did not answer). The service is a host of its own.
func (c *cluster) alert(r *replica, svc string) int {
	return c.alertOn(r, svc, svc)
}

// alertOn is alert for a service on host, one of several there.
func (c *cluster) alertOn(r *replica, svc, host string) int {
	status, err := c.deliver(r, svc, host)
	require.NoError(c.t, err)
	return status
}

// deliver is alertOn that returns its errors, for goroutines other than
// the test's.
func (c *cluster) deliver(r *replica, svc, host string) (int, error) {
	body, err := json.Marshal(map[string]any{
		"version": "4", "status": "firing", "receiver": "runbot", "groupKey": "{}:{svc=\"" + svc + "\"}",
		"alerts": []any{map[string]any{
			"status": "firing", "fingerprint": "fp-" + svc,
			"labels":   map[string]string{"alertname": "FailoverTest", "svc": svc, "host": host},
			"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		}},
	})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/alerts/alertmanager", r.port), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+failoverAlertTok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil // the replica did not answer
	}
	// Read to the end, so that the connection is kept for the next one.
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // only the status matters
	return resp.StatusCode, nil
}

// click presses Approve on a plan's message, signed as Slack signs it,
// landing on replica r.
func (c *cluster) click(r *replica, plan store.Plan, run store.Run) {
	c.t.Helper()
	require.NotNil(c.t, run.Message, "run %s was posted", run.ID)
	status, err := c.vote(r, plan, run)
	require.NoError(c.t, err)
	require.Equal(c.t, http.StatusOK, status)
}

// vote is click that returns the HTTP status (0 when the replica did not
// answer within a minute) and its errors, for goroutines other than the
// test's.
func (c *cluster) vote(r *replica, plan store.Plan, run store.Run) (int, error) {
	if run.Message == nil {
		return 0, fmt.Errorf("run %s was not posted", run.ID)
	}
	req, err := slackrec.Click{User: failoverApprover, Channel: run.Message.Channel, TS: run.Message.ID, ActionID: "runbot_approve",
		Value: plan.ID + "|" + plan.Hash, ResponseURL: c.rec.ResponseURL("click-" + plan.ID)}.Request(c.t.Context(), fmt.Sprintf("http://127.0.0.1:%d", r.port), failoverSigning)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil // the replica did not answer
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // the vote shows in the store
	return resp.StatusCode, nil
}

// runsOf returns the runs of a service, oldest first.
func (c *cluster) runsOf(svc string) []store.Run {
	c.t.Helper()
	ctx, cancel := context.WithTimeoutCause(context.Background(), 10*time.Second, errors.New("listing runs took too long"))
	defer cancel()
	all, err := c.st.ListRuns(ctx, store.RunFilter{Runbook: "failover", Limit: 10000})
	require.NoError(c.t, err)
	all = postedRefs(ctx, c.t, c.st, all)
	var out []store.Run
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Params["svc"] == svc {
			out = append(out, all[i])
		}
	}
	return out
}

// proposed waits for the plan a broken service's run proposed.
func (c *cluster) proposed(svc string) (store.Plan, store.Run) {
	c.t.Helper()
	var (
		plan store.Plan
		run  store.Run
	)
	c.until("a plan for "+svc, time.Minute, func() bool {
		runs := c.runsOf(svc)
		if len(runs) == 0 {
			return false
		}
		run = runs[len(runs)-1]
		plans, err := c.st.ListPlans(c.t.Context(), store.PlanFilter{RunID: run.ID})
		require.NoError(c.t, err)
		if len(plans) == 0 || run.Message == nil {
			return false
		}
		plan = plans[0]
		return true
	})
	return plan, run
}

func (c *cluster) plan(id string) store.Plan {
	c.t.Helper()
	p, err := c.st.GetPlan(c.t.Context(), id)
	require.NoError(c.t, err)
	return p
}

// updatedSince reports whether a chat.update of the message ts made after
// the first n calls says text.
func (c *cluster) updatedSince(n int, ts, text string) bool {
	calls := c.rec.Calls()
	for _, call := range calls[min(n, len(calls)):] {
		if call.Method == "chat.update" && call.Status == http.StatusOK && call.Form.Get("ts") == ts && strings.Contains(call.Text(), text) {
			return true
		}
	}
	return false
}

// TestFailoverThreeReplicasOnPostgres runs three real `runbot serve`
// replicas on one throwaway PostgreSQL database, at their production lease
// and sweep intervals, with alerts and approval clicks landing on any of
// them and the work run on this host (local transport; the "restart" is a
// command that counts itself in a file on the target):
//
//   - an alert storm, every alert delivered to every replica at once,
//     gives exactly one run per fingerprint;
//   - a replica SIGKILLed while it applies an approved restart leaves the
//     plan interrupted, another replica reports it in the plan's message,
//     and it is never applied again;
//   - at randomized kill points after the click (RUNBOT_FAILOVER_KILLS of
//     them: 3 by default, a few minutes; the long form runs 50, about 40
//     minutes, since an alert orphaned by a kill waits up to a minute for
//     a survivor's check) a replica, half of the time the one applying, is
//     SIGKILLed: a service is never restarted twice, a plan approved on
//     the dead replica is applied by a survivor, and an alert accepted by
//     the replica just before it died is run by the survivors before it
//     starts again.
//
// The replicas share a host, so a killed replica's rows are recovered at
// the next sweep of another (its pid is gone) rather than after its lease
// expires, which the store, dispatch and schedule tests cover under
// synctest.
func TestFailoverThreeReplicasOnPostgres(t *testing.T) {
	kills := failoverDefaultKills
	if v := os.Getenv(failoverKillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "%s=%q", failoverKillsEnv, v)
		kills = n
	}
	const fingerprints = 20
	hosts := []string{"victim"}
	for i := range fingerprints {
		hosts = append(hosts, fmt.Sprintf("storm-%d", i))
	}
	for i := range kills {
		hosts = append(hosts, fmt.Sprintf("kill-%d", i), fmt.Sprintf("accepted-%d", i))
	}
	c := newCluster(t, 3, hosts)

	t.Run("storm", func(t *testing.T) {
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted = map[string]int{}
		)
		for i := range fingerprints {
			svc := fmt.Sprintf("storm-%d", i)
			c.setState(svc, "ok")
			for _, r := range c.replicas {
				for range 2 {
					wg.Go(func() {
						if code := c.alert(r, svc); code == http.StatusOK {
							mu.Lock()
							accepted[svc]++
							mu.Unlock()
						}
					})
				}
			}
		}
		wg.Wait()
		owners := map[string]int{}
		for i := range fingerprints {
			svc := fmt.Sprintf("storm-%d", i)
			require.Equal(t, 2*len(c.replicas), accepted[svc], "%s: every delivery accepted", svc)
			c.until("the run of "+svc, time.Minute, func() bool {
				runs := c.runsOf(svc)
				return len(runs) > 0 && runs[0].Status.Final()
			})
		}
		// Deliveries after the runs ended are folded into them too.
		time.Sleep(2 * time.Second)
		for i := range fingerprints {
			svc := fmt.Sprintf("storm-%d", i)
			runs := c.runsOf(svc)
			require.Len(t, runs, 1, "%s: one run per fingerprint across the replicas", svc)
			require.Equal(t, store.RunFinished, runs[0].Status)
			owners[runs[0].Owner]++
		}
		t.Logf("storm: %d fingerprints, %d deliveries each, one run each; runs per replica: %v", fingerprints, 2*len(c.replicas), owners)
	})

	t.Run("kill mid-remediation", func(t *testing.T) {
		c.setState("victim", "broken")
		require.Equal(t, http.StatusOK, c.alert(c.replicas[0], "victim"))
		plan, run := c.proposed("victim")
		applier := c.replicas[1]
		c.click(applier, plan, run)
		c.until("the restart started", time.Minute, func() bool { return c.restarts("victim") == 1 })
		calls := len(c.rec.Calls())
		c.kill(applier)
		c.until("the plan is interrupted", time.Minute, func() bool { return c.plan(plan.ID).State == store.PlanInterrupted })
		c.until("another replica reports it", time.Minute, func() bool {
			return c.updatedSince(calls, run.Message.ID, "not re-applied, a new approval is needed")
		})
		c.start(applier)
		time.Sleep(3 * time.Second)
		require.Equal(t, 1, c.restarts("victim"), "the interrupted restart is never applied again")
		require.Equal(t, store.PlanInterrupted, c.plan(plan.ID).State)
	})

	t.Run("randomized kill points", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
		stats := map[store.PlanState]int{}
		appliersKilled := 0
		var acceptedBeforeKill []string
		for i := range kills {
			svc := fmt.Sprintf("kill-%d", i)
			c.setState(svc, "broken")
			from := c.replicas[rng.IntN(len(c.replicas))]
			require.Equal(t, http.StatusOK, c.alert(from, svc))
			plan, run := c.proposed(svc)
			applier := c.replicas[rng.IntN(len(c.replicas))]
			c.click(applier, plan, run)
			time.Sleep(time.Duration(rng.Int64N(int64(3500 * time.Millisecond))))
			victim := applier
			if rng.IntN(2) == 1 {
				victim = c.replicas[rng.IntN(len(c.replicas))]
			}
			if victim == applier {
				appliersKilled++
			}
			// An alert the victim accepts just before it dies must run.
			other := fmt.Sprintf("accepted-%d", i)
			c.setState(other, "ok")
			accepted := c.alert(victim, other) == http.StatusOK
			if accepted {
				acceptedBeforeKill = append(acceptedBeforeKill, other)
			}
			c.kill(victim)
			// A click that died with its replica before the approval was
			// recorded leaves the plan proposed: the approver clicks
			// again. One that died after it (the plan approved, never
			// applying) is applied by a survivor's sweep a minute later.
			// Any other plan ends.
			c.until("plan of "+svc+" ends", 3*time.Minute, func() bool {
				st := c.plan(plan.ID).State
				return st.Final() || (victim == applier && st == store.PlanProposed)
			})
			if st := c.plan(plan.ID).State; st == store.PlanProposed {
				time.Sleep(store.DefaultRecoveryInterval + 2*time.Second)
				require.Equal(t, st, c.plan(plan.ID).State, "%s: nobody moves a plan whose click died unrecorded", svc)
				require.Zero(t, c.restarts(svc), "%s: a plan never approved restarted nothing", svc)
			}
			if accepted {
				// The replicas still alive run it, before the victim is
				// back to recover it at its start.
				c.until("the run of "+other+", accepted by "+victim.name+" before it died", 2*time.Minute, func() bool {
					runs := c.runsOf(other)
					return len(runs) > 0 && runs[len(runs)-1].Status == store.RunFinished
				})
			}
			c.start(victim)
			final := c.plan(plan.ID).State
			stats[final]++
			if final != store.PlanDone {
				events, err := c.st.Audit(t.Context(), store.AuditFilter{PlanID: plan.ID, Kind: store.AuditPlanState})
				require.NoError(t, err)
				if len(events) > 0 {
					t.Logf("%s: plan %s, killed %s (applier %s): %s", svc, final, victim.name, applier.name, events[len(events)-1].Detail)
				}
			}
			require.LessOrEqual(t, c.restarts(svc), 1, "%s: restarted twice (plan %s)", svc, final)
			switch final {
			case store.PlanDone:
				require.Equal(t, 1, c.restarts(svc))
			case store.PlanInterrupted, store.PlanFailed, store.PlanProposed:
			default:
				t.Fatalf("%s: plan ended %s", svc, final)
			}
		}
		for _, svc := range acceptedBeforeKill {
			c.until("the run of accepted alert "+svc, 2*time.Minute, func() bool {
				runs := c.runsOf(svc)
				return len(runs) > 0 && runs[len(runs)-1].Status == store.RunFinished
			})
		}
		time.Sleep(3 * time.Second)
		for i := range kills {
			svc := fmt.Sprintf("kill-%d", i)
			require.LessOrEqual(t, c.restarts(svc), 1, "%s: restarted twice", svc)
		}
		t.Logf("randomized kills: %d kill points (%d of the replica applying), plans ended %v, %d alerts accepted just before the kill all ran on the survivors",
			kills, appliersKilled, stats, len(acceptedBeforeKill))
	})
}
