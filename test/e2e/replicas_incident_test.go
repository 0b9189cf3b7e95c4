//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/slackchat/slackrec"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// incidentPowerCutMidApply is the incident runbot was built for, across
// the cluster: the target's SGLang PD deployment wedges under load, a real
// Alertmanager notifies all three replicas, one run diagnoses the wedge
// over SSH from a replica's host, two approvers approve on two replicas,
// and the host of the replica applying the fix loses power after both
// engines restarted with the flag, while it verifies. A survivor ends the
// plan interrupted; each engine was restarted once, and nothing restarts
// them again, not even the replica when it is back.
func (rc *replicaCluster) incidentPowerCutMidApply() {
	t := rc.t
	h := rc.target
	rc.c.Step(t, h, "incident: the target's SGLang PD deployment runs under load, and the abort burst wedges decode")
	h.Run(t, "systemctl start "+strings.Join(testhost.Units, " "))
	defer func() {
		// The later phases' target runs cluster-app only.
		_, _ = h.Exec(t.Context(), "systemctl stop e2e-load "+strings.Join(testhost.Units, " "))
	}()
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		require.NotContains(t, h.Run(t, "cat "+script), "--disable-overlap-schedule", "the deployment starts with the overlap schedule on")
	}
	// A second after the units started, so that their start is not
	// counted as a restart (journalctl --since takes whole seconds).
	since := strings.TrimSpace(h.Run(t, "sleep 1.1; date +%s"))
	startLoad(t, h)
	testhost.Eventually(t, time.Minute, "decode runs batches", func() (bool, string) {
		return strings.Contains(h.Journal(t, testhost.UnitDecode, 200), "Decode batch"), ""
	})
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":true`)
	posted := len(rc.rec.Calls())

	rc.c.Step(t, nil, "incident: a real Alertmanager notifies all three replicas; one run diagnoses the wedge over SSH")
	var hooks strings.Builder
	for _, r := range rc.replicas {
		fmt.Fprintf(&hooks, `
      - url: %s/alerts/alertmanager
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials: %s}`, rc.url(r), rcAlertTok)
	}
	// Every label is its own group, and a repeat every 4 s: the survivors
	// get the alert again and again after the cut.
	am := startAlertmanagerWith(t, t.TempDir(), `
route:
  receiver: runbot
  group_by: ['...']
  group_wait: 200ms
  group_interval: 2s
  repeat_interval: 4s
receivers:
  - name: runbot
    webhook_configs:`+hooks.String()+"\n")
	postAlert(t, am, h.Deployment, false)
	plan, run := rc.proposedWhere("sglang-pd-wedge", "deployment", h.Deployment, 4*time.Minute)
	require.Equal(t, "disable_overlap_and_restart", plan.Remediation, "run %s", run.ID)
	require.True(t, anyText(rc.rec.Calls()[posted:], "", "PD transfer wedge"), "the diagnosis is in Slack")

	rc.c.Step(t, nil, "incident: two approvers approve on two replicas; the power cut strikes while the fix verifies")
	rc.voteAs(rc.replicas[0], rcApprover, plan, run)
	rc.voteAs(rc.replicas[1], rcApprover2, plan, run)
	var p store.Plan
	testhost.Eventually(t, 5*time.Minute, "the fix restarted both engines and verifies", func() (bool, string) {
		p = rc.plan(plan.ID)
		require.False(t, p.State.Final(), "the fix ended (%s) before the power cut could strike mid-apply", p.State)
		return p.State == store.PlanVerifying, string(p.State)
	})
	actions := rc.actions(plan.ID)
	for _, a := range actions {
		require.Equal(t, store.ActionDone, a.State, "action %d (%s on %s) before the cut", a.Index, a.Action, a.Target)
	}
	applier := rc.replicaOf(p.Owner)
	cut := time.Now()
	rc.c.PowerCut(t, applier)
	p, took := rc.settled(plan.ID, cut, 3*time.Minute)
	require.Equal(t, store.PlanInterrupted, p.State, "a survivor ends the plan of a replica that lost power while verifying")
	rc.survivorSays(applier, cut, "remediation was interrupted: the process applying it died", p.ID)
	rc.recovered("power cut of "+applier.Name+" verifying the incident's fix: plan interrupted by a survivor after", took)

	rc.c.Step(t, h, "incident: each engine was restarted once, with the flag, and the fix holds")
	starts := func() string {
		var out []string
		for _, unit := range []string{testhost.UnitPrefill, testhost.UnitDecode} {
			n := h.Run(t, fmt.Sprintf("journalctl -u %s --since @%s --no-pager -o cat | grep -c '^Started ' || true", unit, since))
			out = append(out, unit+"="+strings.TrimSpace(n))
		}
		return strings.Join(out, " ")
	}
	require.Equal(t, testhost.UnitPrefill+"=1 "+testhost.UnitDecode+"=1", starts(), "each engine restarted once")
	for _, script := range []string{testhost.PrefillScript, testhost.DecodeScript} {
		require.Contains(t, h.Run(t, "cat "+script), "--disable-overlap-schedule")
	}
	pid := h.UnitState(t, testhost.UnitDecode)["MainPID"]
	require.Contains(t, h.Run(t, "tr '\\0' ' ' < /proc/"+pid+"/cmdline"), "--disable-overlap-schedule")
	require.Contains(t, h.Fault(t, "decode", `{"fault":"pd-wedge"}`), `"wedged":false`)

	rc.c.Step(t, nil, "incident: Alertmanager's repeats to the survivors run nothing again; its resolve closes the thread")
	time.Sleep(12 * time.Second) // three repeat intervals of Alertmanager's
	runs, err := rc.runsWhere("sglang-pd-wedge", "deployment", h.Deployment)
	require.NoError(t, err)
	require.Len(t, runs, 1, "one run for the alert, whichever replicas got it and however often")
	postAlert(t, am, h.Deployment, true)
	_, err = rc.rec.WaitTimeout(2*time.Minute, func(calls []slackrec.Call) bool {
		for _, c := range calls[posted:] {
			if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") != "" && strings.Contains(c.Text(), "resolved") {
				return true
			}
		}
		return false
	})
	require.NoError(t, err, "no resolution in the thread")
	var top []string
	for _, c := range rc.rec.Calls()[posted:] {
		if c.Method == "chat.postMessage" && c.Form.Get("thread_ts") == "" {
			top = append(top, c.Text())
		}
	}
	require.Len(t, top, 1, "one message in the channel for the one alert: %q", top)

	rc.c.Step(t, applier, "incident: the replica's host powers on again, runbot installed anew; nothing restarts the engines")
	rc.c.PowerOn(t, applier)
	rc.install(applier, "")
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		require.Equal(t, testhost.UnitPrefill+"=1 "+testhost.UnitDecode+"=1", starts(), "an engine was restarted again")
		require.Len(t, rc.actions(plan.ID), len(actions), "no further action of plan %s", plan.ID)
		require.Equal(t, store.PlanInterrupted, rc.plan(plan.ID).State)
	}
	rc.nothingRunning()
	t.Logf("FIGURE incident across hosts: 1 run, %d action records, each engine restarted once, plan interrupted %.1f s after the cut", len(actions), took.Seconds())
}
