//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// Secrets and names of the replica cluster; none of them is a real one.
const (
	rcSigning  = "replicas-signing-secret"
	rcAlertTok = "replicas-alert-token"
	rcBotToken = "xoxb-replicas-bot-token"
	rcApprover = "U0APP"
	// rcApprover2 is the second of the two approvers the incident's fix
	// needs (the sre-oncall group, two_person).
	rcApprover2 = "U0APP2"
	rcChannel   = "C0OPS"
	rcDBPass    = "replicas-db-password"
	rcReplPass  = "replicas-replication-password"
	rcPort      = 8080
	// rcServices are the services of the target host, each a host of its
	// own in the replicas' inventory: one per fault test, and the storm's.
	rcStormSize = 30
)

// replicaCluster is runbot as an SRE runs it across racks: three `runbot
// serve` replicas, each the systemd unit of deploy/ on a test host of its
// own (its own network namespace, machine and clock), sharing one
// PostgreSQL database whose primary streams synchronously to a standby on
// a further host, and a target host they reach over real SSH, where
// cluster-app (a systemd unit) is what they diagnose and restart.
type replicaCluster struct {
	t        *testing.T
	c        *testhost.Cluster
	target   *testhost.Host
	replicas []*testhost.Host
	primary  *testhost.Host
	standby  *testhost.Host
	rec      *slackrec.Recorder
	slackURL string
	dsn      string
	// st is the test's own view of the shared store, through the same
	// multi-host URL as the replicas.
	st   store.Store
	http *http.Client
	// files is the local directory every replica's install uploads.
	files string
	// extraConfig is appended to every replica's runbot.yaml, and
	// extraHosts are more services on the target in their inventory.
	extraConfig string
	extraHosts  []string
}

// newReplicaCluster boots six test hosts (th1 the target, th2-th4 the
// replicas, th5 the primary, th6 the standby) and starts everything; the
// replicas' config gets extraConfig, their inventory the services
// extraHosts too.
func newReplicaCluster(t *testing.T, extraConfig string, extraHosts ...string) *replicaCluster {
	t.Helper()
	c := testhost.Up(t, 6)
	rc := &replicaCluster{t: t, c: c, target: c.Hosts[0], replicas: c.Hosts[1:4], primary: c.Hosts[4], standby: c.Hosts[5],
		http: &http.Client{Timeout: time.Minute}, extraConfig: extraConfig, extraHosts: extraHosts}
	t.Cleanup(rc.http.CloseIdleConnections)

	c.Step(t, nil, "the simulated SGLang units stop: here the target runs cluster-app, the others runbot or PostgreSQL")
	for _, h := range c.Hosts {
		h.Run(t, "systemctl stop "+strings.Join(testhost.Units, " "))
	}
	c.Step(t, rc.target, "cluster-app runs on the target")
	rc.target.Run(t, `set -e
mkdir -p /run/cluster-app
printf '[Unit]\nDescription=cluster-app, the service of the replica tests\n[Service]\nExecStart=/bin/sleep infinity\n' > /etc/systemd/system/cluster-app.service
systemctl daemon-reload
systemctl start cluster-app`)

	rc.startPostgres()
	rc.rec = slackrec.New()
	t.Cleanup(rc.rec.Close)
	rc.slackURL = proxyToHosts(t, rc.rec.APIURL())
	rc.writeFiles()
	for _, h := range rc.replicas {
		rc.install(h, "")
	}
	rc.reopenStore()
	t.Cleanup(func() { _ = rc.st.Close() }) // a reader; nothing to lose
	t.Cleanup(func() {
		if t.Failed() {
			for _, h := range rc.replicas {
				if r, err := h.Exec(context.Background(), "journalctl -u runbot -n 60 --no-pager -o short-iso"); err == nil {
					t.Logf("runbot on %s:\n%s", h.Name, r.Stdout)
				}
			}
		}
	})
	return rc
}

// reopenStore opens the test's view of the shared store, under an
// application name of its own, closing the one before.
func (rc *replicaCluster) reopenStore() {
	rc.t.Helper()
	u, err := url.Parse(rc.dsn)
	require.NoError(rc.t, err)
	q := u.Query()
	q.Set("application_name", "runbot-test-reader")
	u.RawQuery = q.Encode()
	st, err := store.OpenURL(rc.t.Context(), u.String(), store.WithOwner("replicas-test"))
	require.NoError(rc.t, err)
	if rc.st != nil {
		_ = rc.st.Close() // a reader; nothing to lose
	}
	rc.st = st
}

// subnet is the test network's /24, which PostgreSQL lets in.
func (rc *replicaCluster) subnet() string {
	a := rc.target.Address
	return a[:strings.LastIndex(a, ".")] + ".0/24"
}

// pgConf and pgHBA are what both PostgreSQL hosts add to the Debian
// package's cluster: listening on the test network, streaming WAL to a
// standby, password logins for runbot and the replication user.
const pgConf = `listen_addresses = '*'
wal_level = replica
max_wal_senders = 4
wal_keep_size = '64MB'
`

func (rc *replicaCluster) pgHBA() string {
	return fmt.Sprintf("host runbot runbot %[1]s scram-sha-256\nhost replication replicator %[1]s scram-sha-256\n", rc.subnet())
}

// startPostgres makes th5 the primary (the Debian package's cluster,
// listening on the test network, password logins) and th6 its standby.
func (rc *replicaCluster) startPostgres() {
	t := rc.t
	rc.c.Step(t, rc.primary, "PostgreSQL primary")
	rc.primary.Run(t, fmt.Sprintf(`set -e
cat > /etc/postgresql/15/main/conf.d/runbot.conf <<'EOF'
%sEOF
printf %%s %s >> /etc/postgresql/15/main/pg_hba.conf
systemctl start postgresql@15-main
sudo -u postgres psql -v ON_ERROR_STOP=1 -q <<'EOF'
CREATE ROLE runbot LOGIN PASSWORD '%s';
CREATE DATABASE runbot OWNER runbot;
CREATE ROLE replicator REPLICATION LOGIN PASSWORD '%s';
EOF`, pgConf, shell.Quote(rc.pgHBA()), rcDBPass, rcReplPass))
	rc.startStandby()
	// The replicas' URL names both hosts and takes the one that takes
	// writes, as a deployment with a standby configures it. The test
	// network is private, so no TLS here.
	rc.dsn = fmt.Sprintf("postgres://runbot:%s@%s:5432,%s:5432/runbot?sslmode=disable&target_session_attrs=read-write",
		rcDBPass, rc.primary.Address, rc.standby.Address)
}

// startStandby copies the primary to the standby's host with
// pg_basebackup, starts it streaming, and then makes the replication
// synchronous: a commit the primary acknowledged is on the standby.
func (rc *replicaCluster) startStandby() {
	t := rc.t
	rc.c.Step(t, rc.standby, "PostgreSQL standby, streaming from the primary on %s", rc.primary.Name)
	rc.standby.Run(t, fmt.Sprintf(`set -e
cat > /etc/postgresql/15/main/conf.d/runbot.conf <<'EOF'
%sEOF
printf %%s %s >> /etc/postgresql/15/main/pg_hba.conf
rm -rf /var/lib/postgresql/15/main
sudo -u postgres env PGPASSWORD=%s pg_basebackup -d 'host=%s user=replicator application_name=standby' -D /var/lib/postgresql/15/main -R -X stream -c fast
systemctl start postgresql@15-main`, pgConf, shell.Quote(rc.pgHBA()), rcReplPass, rc.primary.Address))
	// Only now that the standby streams: a primary that waits for a
	// standby that is not there commits nothing.
	rc.primary.Run(t, `set -e
cat > /etc/postgresql/15/main/conf.d/runbot-sync.conf <<'EOF'
# The standby must have flushed a commit before the primary acknowledges it.
synchronous_standby_names = 'standby'
synchronous_commit = on
EOF
systemctl reload postgresql@15-main`)
	testhost.Eventually(t, time.Minute, "the standby streams in synchronous replication", func() (bool, string) {
		out := rc.primary.Run(t, `sudo -u postgres psql -tAc "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'"`)
		return strings.TrimSpace(out) == "sync", out
	})
}

// services are the hosts of the replicas' inventory, all on the target.
func rcServices() []string {
	s := []string{"cut", "pgcut", "slow", "slow2", "skew", "promo"}
	for i := range rcStormSize {
		s = append(s, fmt.Sprintf("storm-%d", i+1))
	}
	return s
}

// writeFiles prepares what an operator puts on each replica's host: the
// binary, deploy/runbot.service, and /etc/runbot (config, inventory,
// runbooks, the service's SSH key and the target's pinned host key).
func (rc *replicaCluster) writeFiles() {
	t := rc.t
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	require.NoError(t, os.MkdirAll(filepath.Join(etc, "runbooks"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(etc, "ssh"), 0o700))
	bin, err := os.ReadFile(runbotBinary(t))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot"), bin, 0o755))
	unit, err := os.ReadFile("../../deploy/runbot.service")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbot.service"), unit, 0o644))
	for _, rb := range []string{"cluster-app.yaml", "cluster-slow.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "replicas", rb))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(etc, "runbooks", rb), b, 0o644))
	}
	key, err := os.ReadFile(rc.c.Key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(etc, "ssh", "id_ed25519"), key, 0o600))
	known, err := os.ReadFile(rc.c.KnownHosts)
	require.NoError(t, err)
	var pinned []string
	for _, line := range strings.Split(string(known), "\n") {
		if strings.HasPrefix(line, rc.target.Address+" ") {
			pinned = append(pinned, line)
		}
	}
	require.Len(t, pinned, 1, "the target's host key in %s", rc.c.KnownHosts)
	require.NoError(t, os.WriteFile(filepath.Join(etc, "ssh", "known_hosts"), []byte(pinned[0]+"\n"), 0o644))

	var inv strings.Builder
	inv.WriteString("hosts:\n")
	for _, svc := range append(append(rcServices(), rc.extraHosts...), rc.target.Name) {
		fmt.Fprintf(&inv, "  %s: {address: %s, port: 22, user: root, identity_files: [/etc/runbot/ssh/id_ed25519], known_hosts: [/etc/runbot/ssh/known_hosts]}\n",
			svc, rc.target.Address)
	}
	// The target's SGLang PD deployment, as up.sh's inventory names it,
	// for the incident's phase.
	fmt.Fprintf(&inv, `deployments:
  %[1]s:
    roles:
      router:  {host: %[2]s, unit: %[3]s, url: "http://127.0.0.1:%[6]d"}
      prefill: {host: %[2]s, unit: %[4]s, url: "http://127.0.0.1:%[7]d", launch_script: %[9]s}
      decode:  {host: %[2]s, unit: %[5]s, url: "http://127.0.0.1:%[8]d", launch_script: %[10]s}
`, rc.target.Deployment, rc.target.Name, testhost.UnitRouter, testhost.UnitPrefill, testhost.UnitDecode,
		testhost.RouterPort, testhost.PrefillPort, testhost.DecodePort, testhost.PrefillScript, testhost.DecodeScript)
	require.NoError(t, os.WriteFile(filepath.Join(etc, "inventory.yaml"), []byte(inv.String()), 0o644))
	cfg := fmt.Sprintf(`# runbot on a replica host of the replica fault tests.
listen: 0.0.0.0:%[1]d
store: {env: RUNBOT_STORE}
inventory: /etc/runbot/inventory.yaml
runbooks: [/etc/runbot/runbooks]
log: {format: text, level: info}
groups: {sre-oncall: [%[4]s, %[5]s]}
slack:
  mode: http
  bot_token: {env: SLACK_BOT_TOKEN}
  signing_secret: {env: SLACK_SIGNING_SECRET}
  channel: %[2]s
  api_url: %[3]s
  authorize:
    - {runbooks: ["*"], users: [%[4]s, %[5]s]}
alerts:
  bearer_token: {env: RUNBOT_ALERT_TOKEN}
  routes:
    - match: {alertname: ClusterApp}
      runbook: cluster-app
      params: {svc: '{{ .labels.svc }}', host: '{{ .labels.svc }}'}
    - match: {alertname: ClusterSlow}
      runbook: cluster-slow
      params: {svc: '{{ .labels.svc }}', host: '{{ .labels.svc }}'}
    - match: {alertname: SGLangRequestsHanging}
      runbook: sglang-pd-wedge
      params: {deployment: '{{ .labels.deployment }}'}
`, rcPort, rcChannel, rc.slackURL, rcApprover, rcApprover2) + rc.extraConfig
	require.NoError(t, os.WriteFile(filepath.Join(etc, "runbot.yaml"), []byte(cfg), 0o644))
	env := fmt.Sprintf("RUNBOT_STORE=%s\nSLACK_BOT_TOKEN=%s\nSLACK_SIGNING_SECRET=%s\nRUNBOT_ALERT_TOKEN=%s\n", rc.dsn, rcBotToken, rcSigning, rcAlertTok)
	require.NoError(t, os.WriteFile(filepath.Join(etc, "runbot.env"), []byte(env), 0o600))
	rc.files = dir
}

// install puts runbot on h as docs/deploy.md does and starts its unit;
// clockOffset, unless empty, shifts that replica's host clock (the test
// hook RUNBOT_TEST_CLOCK_OFFSET). It returns once the replica is ready.
func (rc *replicaCluster) install(h *testhost.Host, clockOffset string) {
	t := rc.t
	rc.c.Step(t, h, "install runbot serve as the systemd unit of deploy/")
	h.Upload(t, rc.files, "/root/runbot-release")
	offset := ""
	if clockOffset != "" {
		offset = "echo RUNBOT_TEST_CLOCK_OFFSET=" + clockOffset + " >> /etc/runbot/runbot.env"
	}
	h.Run(t, `set -e
systemctl stop runbot 2>/dev/null || true
install -m 0755 /root/runbot-release/runbot /usr/local/bin/runbot
rm -rf /etc/runbot && cp -r /root/runbot-release/etc /etc/runbot
chown -R runbot:runbot /etc/runbot/ssh && chmod 0600 /etc/runbot/ssh/id_ed25519 /etc/runbot/runbot.env
`+offset+`
install -m 0644 /root/runbot-release/runbot.service /etc/systemd/system/runbot.service
systemctl daemon-reload
systemctl start runbot`)
	rc.ready(h)
}

// ready waits until the replica on h answers /readyz.
func (rc *replicaCluster) ready(h *testhost.Host) {
	rc.t.Helper()
	testhost.Eventually(rc.t, 2*time.Minute, "runbot on "+h.Name+" is ready", func() (bool, string) {
		resp, err := rc.http.Get(rc.url(h) + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer func() { _ = resp.Body.Close() }() // only the status matters
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

func (rc *replicaCluster) url(h *testhost.Host) string {
	return "http://" + h.Address + ":" + strconv.Itoa(rcPort)
}

// setState writes a service's state file on the target.
func (rc *replicaCluster) setState(svc, state string) {
	rc.t.Helper()
	rc.target.Run(rc.t, fmt.Sprintf("rm -f /run/cluster-app/%[1]s.warming /run/cluster-app/%[1]s.checking; echo %[2]s > /run/cluster-app/%[1]s.state", svc, state))
}

// restarts counts cluster-app's restarts in the target's journal.
func (rc *replicaCluster) restarts() int {
	rc.t.Helper()
	out := rc.target.Run(rc.t, "journalctl -u cluster-app -o cat --no-pager | grep -c '^Stopping cluster-app.service' || true")
	n, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(rc.t, err, out)
	return n
}

// marker reports whether the target has a service's marker file (the
// runbooks touch .warming and .checking when their slow part begins).
func (rc *replicaCluster) marker(svc, kind string) bool {
	r, err := rc.target.Exec(context.Background(), "test -e /run/cluster-app/"+svc+"."+kind)
	return err == nil && r.ExitCode == 0
}

// deliver posts an Alertmanager webhook notification for svc to the
// replica on h, once, and returns the HTTP status (0: no answer).
func (rc *replicaCluster) deliver(h *testhost.Host, alertname, svc string) (int, error) {
	return rc.deliverKey(h, alertname, svc, svc)
}

// deliverKey is deliver for one of several alerts about svc, told apart
// by key (their fingerprints differ).
func (rc *replicaCluster) deliverKey(h *testhost.Host, alertname, svc, key string) (int, error) {
	body, err := json.Marshal(map[string]any{
		"version": "4", "status": "firing", "receiver": "runbot", "groupKey": "{}:{key=\"" + key + "\"}",
		"alerts": []any{map[string]any{
			"status": "firing", "fingerprint": "fp-" + alertname + "-" + key,
			"labels":   map[string]string{"alertname": alertname, "svc": svc, "key": key},
			"startsAt": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
		}},
	})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, rc.url(h)+"/alerts/alertmanager", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+rcAlertTok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := rc.http.Do(req)
	if err != nil {
		return 0, nil //nolint:nilerr // the replica did not answer: a status, not the test's error
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // only the status matters
	return resp.StatusCode, nil
}

// alert delivers until a replica accepts it, as Alertmanager retries a
// notification a receiver did not take, starting with h and going round
// the replicas; it returns how many deliveries were refused or unanswered.
func (rc *replicaCluster) alert(h *testhost.Host, alertname, svc string) int {
	rc.t.Helper()
	order := []*testhost.Host{h}
	for _, r := range rc.replicas {
		if r != h {
			order = append(order, r)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for failed := 0; ; failed++ {
		status, err := rc.deliver(order[failed%len(order)], alertname, svc)
		require.NoError(rc.t, err)
		if status == http.StatusOK {
			return failed
		}
		require.True(rc.t, time.Now().Before(deadline), "no replica accepted the alert for %s in 2 minutes (last status %d)", svc, status)
		time.Sleep(time.Second)
	}
}

// runsOf returns a service's runs of a runbook, oldest first, as chat
// shows them (a message reference is the platform's).
func (rc *replicaCluster) runsOf(runbook, svc string) []store.Run {
	rc.t.Helper()
	runs, err := rc.runsOfErr(runbook, svc)
	require.NoError(rc.t, err)
	return runs
}

// runsOfErr is runsOf that returns its errors, for goroutines.
func (rc *replicaCluster) runsOfErr(runbook, svc string) ([]store.Run, error) {
	return rc.runsWhere(runbook, "svc", svc)
}

// runsWhere returns the runs of a runbook whose parameter param is value,
// oldest first, as chat shows them.
func (rc *replicaCluster) runsWhere(runbook, param, value string) ([]store.Run, error) {
	ctx, cancel := context.WithTimeoutCause(context.Background(), 30*time.Second, errors.New("listing runs took too long"))
	defer cancel()
	all, err := rc.st.ListRuns(ctx, store.RunFilter{Runbook: runbook, Limit: 100000})
	if err != nil {
		return nil, err
	}
	var out []store.Run
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Params[param] != value {
			continue
		}
		run := all[i]
		if run.Message != nil && strings.HasPrefix(run.Message.ID, store.ChatMessagePrefix) {
			m, err := rc.st.GetChatMessage(ctx, run.Message.ID)
			if err != nil {
				return nil, err
			}
			if m.Posted() {
				ref := *run.Message
				ref.ID = m.PlatformID
				run.Message = &ref
			} else {
				run.Message = nil
			}
		}
		out = append(out, run)
	}
	return out, nil
}

// proposed waits for the plan the newest run of a broken service proposed,
// once its message is posted.
func (rc *replicaCluster) proposed(svc string) (store.Plan, store.Run) {
	rc.t.Helper()
	return rc.proposedWhere("cluster-app", "svc", svc, 2*time.Minute)
}

// proposedWhere is proposed for the newest run of a runbook whose
// parameter param is value, waiting at most within.
func (rc *replicaCluster) proposedWhere(runbook, param, value string, within time.Duration) (store.Plan, store.Run) {
	rc.t.Helper()
	var (
		plan store.Plan
		run  store.Run
	)
	testhost.Eventually(rc.t, within, "a posted plan for "+value, func() (bool, string) {
		runs, err := rc.runsWhere(runbook, param, value)
		require.NoError(rc.t, err)
		if len(runs) == 0 {
			return false, "no run"
		}
		run = runs[len(runs)-1]
		plans, err := rc.st.ListPlans(rc.t.Context(), store.PlanFilter{RunID: run.ID})
		require.NoError(rc.t, err)
		if len(plans) == 0 || run.Message == nil {
			return false, fmt.Sprintf("run %s %s, %d plan(s), posted %v", run.ID, run.Status, len(plans), run.Message != nil)
		}
		plan = plans[0]
		return true, ""
	})
	return plan, run
}

func (rc *replicaCluster) plan(id string) store.Plan {
	rc.t.Helper()
	p, err := rc.st.GetPlan(rc.t.Context(), id)
	require.NoError(rc.t, err)
	return p
}

func (rc *replicaCluster) actions(planID string) []store.ActionRecord {
	rc.t.Helper()
	a, err := rc.st.Actions(rc.t.Context(), planID)
	require.NoError(rc.t, err)
	return a
}

// vote presses Approve on the plan's message as the approver, signed as
// Slack signs it, landing on the replica on h.
func (rc *replicaCluster) vote(h *testhost.Host, plan store.Plan, run store.Run) {
	rc.t.Helper()
	rc.voteAs(h, rcApprover, plan, run)
}

// voteAs is vote by the Slack user user.
func (rc *replicaCluster) voteAs(h *testhost.Host, user string, plan store.Plan, run store.Run) {
	rc.t.Helper()
	status, err := rc.voteAsStatus(h, user, plan, run)
	require.NoError(rc.t, err)
	require.Equal(rc.t, http.StatusOK, status)
}

// voteAsStatus is voteAs that returns the HTTP status (0: no answer) and
// its errors, for goroutines.
func (rc *replicaCluster) voteAsStatus(h *testhost.Host, user string, plan store.Plan, run store.Run) (int, error) {
	if run.Message == nil {
		return 0, fmt.Errorf("run %s was not posted", run.ID)
	}
	req, err := slackrec.Click{User: user, Channel: run.Message.Channel, TS: run.Message.ID, ActionID: "runbot_approve",
		Value: plan.ID + "|" + plan.Hash, ResponseURL: rc.responseURL("click-" + plan.ID)}.Request(rc.t.Context(), rc.url(h), rcSigning)
	if err != nil {
		return 0, err
	}
	resp, err := rc.http.Do(req)
	if err != nil {
		return 0, nil //nolint:nilerr // the replica did not answer: a status, not the test's error
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close() // the vote shows in the store
	return resp.StatusCode, nil
}

// responseURL is the recorder's response_url for id as the replicas reach
// it: through the proxy on the hosts' bridge, like the Web API.
func (rc *replicaCluster) responseURL(id string) string {
	direct := rc.rec.ResponseURL(id)
	u, err := url.Parse(direct)
	proxy, perr := url.Parse(rc.slackURL)
	if err != nil || perr != nil {
		return direct // both are the recorder's and the proxy's own URLs
	}
	u.Host = proxy.Host
	return u.String()
}

// approvedAndWarming breaks svc, has its alert land on alertTo and the
// approval on voteTo, and returns once the fix restarted cluster-app and
// began its warm-up: the plan, and the replica applying it.
func (rc *replicaCluster) approvedAndWarming(svc string, alertTo, voteTo *testhost.Host) (store.Plan, *testhost.Host) {
	rc.t.Helper()
	rc.setState(svc, "broken")
	rc.alert(alertTo, "ClusterApp", svc)
	plan, run := rc.proposed(svc)
	rc.vote(voteTo, plan, run)
	testhost.Eventually(rc.t, 2*time.Minute, svc+"'s fix is warming up", func() (bool, string) {
		return rc.marker(svc, "warming"), string(rc.plan(plan.ID).State)
	})
	plan = rc.plan(plan.ID)
	return plan, rc.replicaOf(plan.Owner)
}

// replicaOf is the replica host an owner (host/pid/start) names.
func (rc *replicaCluster) replicaOf(owner string) *testhost.Host {
	rc.t.Helper()
	name, _, _ := strings.Cut(owner, "/")
	for _, h := range rc.replicas {
		if h.Name == name {
			return h
		}
	}
	rc.t.Fatalf("owner %q is none of the replicas", owner)
	return nil
}

// others are the replicas but h.
func (rc *replicaCluster) others(h *testhost.Host) []*testhost.Host {
	var out []*testhost.Host
	for _, r := range rc.replicas {
		if r != h {
			out = append(out, r)
		}
	}
	return out
}

// settled waits until a plan is in a final state (done, interrupted,
// failed…: not approved, applying or verifying), and returns it and how
// long that took from since.
func (rc *replicaCluster) settled(id string, since time.Time, within time.Duration) (store.Plan, time.Duration) {
	rc.t.Helper()
	var p store.Plan
	testhost.Eventually(rc.t, within, "plan "+id+" settles", func() (bool, string) {
		p = rc.plan(id)
		return p.State.Final(), string(p.State)
	})
	return p, time.Since(since)
}

// nothingRunning checks that no run is left running and no plan applying
// or verifying.
func (rc *replicaCluster) nothingRunning() {
	rc.t.Helper()
	testhost.Eventually(rc.t, 2*time.Minute, "no run running and no plan applying", func() (bool, string) {
		runs, err := rc.st.ListRuns(rc.t.Context(), store.RunFilter{Status: store.RunRunning, Limit: 100})
		require.NoError(rc.t, err)
		plans, err := rc.st.ListPlans(rc.t.Context(), store.PlanFilter{States: []store.PlanState{store.PlanApplying, store.PlanVerifying}})
		require.NoError(rc.t, err)
		return len(runs) == 0 && len(plans) == 0, fmt.Sprintf("%d running run(s), %d applying plan(s)", len(runs), len(plans))
	})
}

// journalSince is the replica's runbot journal from a time on.
func journalSince(t *testing.T, h *testhost.Host, since time.Time) string {
	t.Helper()
	return h.Run(t, "journalctl -u runbot --no-pager -o short-iso --since "+shell.Quote(since.UTC().Format("2006-01-02 15:04:05 UTC")))
}
