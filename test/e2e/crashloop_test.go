//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/test/e2e/testhost"
)

// crashUnits installs, on a test host, units that fail the ways real ones
// do, under real systemd:
//   - e2e-crashloop: its script prints an error and exits 1; Restart=always
//     every 2 s, no start limit, so it loops for ever;
//   - e2e-startlimit: the same script, restarted every 200 ms with a start
//     limit of 3 in 60 s, so systemd gives up within a second;
//   - e2e-stable: a script that stays up.
//
// The crash loop also gets a drop-in, written now, so that "what changed"
// has something recent to find.
const crashUnits = `set -e
cat >/usr/local/bin/e2e-crash.sh <<'EOF'
#!/bin/sh
echo "loading /etc/e2e-crash.conf"
echo "fatal: bind 127.0.0.1:9000: address already in use" >&2
exit 1
EOF
cat >/usr/local/bin/e2e-stable.sh <<'EOF'
#!/bin/sh
echo "serving"
exec sleep infinity
EOF
chmod 755 /usr/local/bin/e2e-crash.sh /usr/local/bin/e2e-stable.sh
cat >/etc/systemd/system/e2e-crashloop.service <<'EOF'
[Unit]
Description=e2e unit that crash-loops
StartLimitIntervalSec=0
[Service]
ExecStart=/usr/local/bin/e2e-crash.sh
Restart=always
RestartSec=2
EOF
mkdir -p /etc/systemd/system/e2e-crashloop.service.d
cat >/etc/systemd/system/e2e-crashloop.service.d/10-env.conf <<'EOF'
[Service]
Environment=E2E_CHANGED=1
EOF
cat >/etc/systemd/system/e2e-startlimit.service <<'EOF'
[Unit]
Description=e2e unit that hits its start limit
StartLimitIntervalSec=60
StartLimitBurst=3
[Service]
ExecStart=/bin/sh /usr/local/bin/e2e-crash.sh
Restart=always
RestartSec=200ms
EOF
cat >/etc/systemd/system/e2e-stable.service <<'EOF'
[Unit]
Description=e2e unit that stays up
[Service]
ExecStart=/usr/local/bin/e2e-stable.sh
Restart=on-failure
EOF
systemctl daemon-reload
systemctl start e2e-crashloop.service e2e-startlimit.service e2e-stable.service || true
`

// crashloopResult is the part of `runbot run --format json` this test reads.
type crashloopResult struct {
	Outcome   string `json:"outcome"`
	Diagnoses []struct {
		ID          string `json:"id"`
		Summary     string `json:"summary"`
		Remediation string `json:"remediation"`
	} `json:"diagnoses"`
	Findings []struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"findings"`
	Remediation *struct {
		State     string `json:"state"`
		Recovered bool   `json:"recovered"`
		Message   string `json:"message"`
	} `json:"remediation"`
}

func (r crashloopResult) ids() (diagnoses, findings []string) {
	for _, d := range r.Diagnoses {
		diagnoses = append(diagnoses, d.ID)
	}
	for _, f := range r.Findings {
		findings = append(findings, f.ID)
	}
	return diagnoses, findings
}

func runCrashloop(t *testing.T, c *testhost.Cluster, store string, args ...string) crashloopResult {
	t.Helper()
	full := append([]string{"run", "systemd-crashloop", "-i", c.Inventory, "--store", store, "--format", "json"}, args...)
	cmd := exec.Command(runbotBinary(t), full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res crashloopResult
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil {
		t.Fatalf("runbot %s: %v; stdout:\n%s\nstderr:\n%s", strings.Join(full, " "), err, stdout.String(), stderr.String())
	}
	for _, f := range res.Findings {
		t.Logf("  finding %s: %s", f.ID, f.Summary)
	}
	for _, d := range res.Diagnoses {
		t.Logf("  diagnosis %s: %s", d.ID, d.Summary)
	}
	return res
}

// TestSystemdCrashloop runs the shipped systemd-crashloop runbook, at its
// defaults, over SSH against real units under real systemd and journald:
// one restarting for ever, one stopped by its start limit, one stable, one
// that does not exist. Then it fixes the start-limited unit's cause and
// applies the runbook's approved remediation, which must bring it up.
// With RUNBOT_UPDATE_RECORDINGS set it rewrites the runbook's recorded
// cases from the diagnosis runs.
func TestSystemdCrashloop(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	store := filepath.Join(t.TempDir(), "runbot.db")

	c.Step(t, h, "install and start the crash-looping, start-limited and stable units")
	h.Run(t, crashUnits)
	testhost.Eventually(t, 30*time.Second, "e2e-startlimit hits its start limit and e2e-crashloop restarts", func() (bool, string) {
		sl := h.UnitState(t, "e2e-startlimit.service")
		cl := h.UnitState(t, "e2e-crashloop.service")
		n, _ := strconv.Atoi(cl["NRestarts"])
		// systemd 252 leaves Result at exit-code when the start limit
		// stops an automatic restart: failed is what says it gave up.
		return sl["ActiveState"] == "failed" && n >= 3, "startlimit " + sl["ActiveState"] + "/" + sl["Result"] + ", crashloop NRestarts " + cl["NRestarts"]
	})

	cases := []struct {
		name      string // the recorded case's name
		unit      string
		diagnosis string
		findings  []string
		absent    []string
		summary   string // a piece of the diagnosis's summary
	}{
		{name: "crashloop", unit: "e2e-crashloop.service", diagnosis: "crashloop",
			findings: []string{"restarting_now", "many_restarts", "last_exit", "dropin_changed", "unit_file_changed", "script_changed"},
			absent:   []string{"start_limit_hit", "running_stably", "killed_by_signal"},
			summary:  "code=exited, status=1/FAILURE"},
		{name: "start-limit-hit", unit: "e2e-startlimit.service", diagnosis: "start_limit_hit",
			findings: []string{"start_limit_hit", "last_exit", "script_changed"},
			absent:   []string{"restarting_now", "running_stably", "crashloop"},
			summary:  "address already in use"},
		{name: "stable", unit: "e2e-stable.service", diagnosis: "stable",
			findings: []string{"running_stably"},
			absent:   []string{"restarting_now", "many_restarts", "start_limit_hit", "last_exit"}},
		{name: "unit-missing", unit: "e2e-no-such-unit.service", diagnosis: "unit_missing", findings: []string{"unit_not_found"}},
	}
	for _, tc := range cases {
		c.Step(t, h, "diagnose %s", tc.unit)
		args := []string{"-p", "host=" + h.Name, "-p", "unit=" + tc.unit}
		if os.Getenv("RUNBOT_UPDATE_RECORDINGS") != "" {
			// The runbook's recorded cases (runbooks/builtin/
			// systemd-crashloop_test.yaml) come from these runs.
			dir := filepath.Join("..", "..", "runbooks", "builtin", "testdata", "recordings", "systemd-crashloop", tc.name)
			require.NoError(t, os.RemoveAll(dir))
			args = append(args, "--record", dir)
		}
		res := runCrashloop(t, c, store, args...)
		diagnoses, findings := res.ids()
		require.Equal(t, []string{tc.diagnosis}, diagnoses, tc.unit)
		for _, f := range tc.findings {
			require.Contains(t, findings, f, tc.unit)
		}
		for _, f := range tc.absent {
			require.NotContains(t, findings, f, tc.unit)
		}
		if tc.summary != "" {
			require.Contains(t, res.Diagnoses[0].Summary, tc.summary, tc.unit)
		}
		if tc.diagnosis == "crashloop" {
			require.Empty(t, res.Diagnoses[0].Remediation, "a crash loop gets no restart proposed")
		}
	}

	c.Step(t, h, "fix the start-limited unit's cause, then apply the approved reset-failed and start")
	h.Run(t, `sed -i 's|^ExecStart=.*|ExecStart=/bin/sh /usr/local/bin/e2e-stable.sh|' /etc/systemd/system/e2e-startlimit.service && systemctl daemon-reload`)
	res := runCrashloop(t, c, store, "-p", "host="+h.Name, "-p", "unit=e2e-startlimit.service",
		"--remediate", "--requested-by", "alice", "--approve-as", "bob", "--group", "sre-oncall=bob")
	diagnoses, _ := res.ids()
	require.Equal(t, []string{"start_limit_hit"}, diagnoses)
	require.Equal(t, "reset_failed_and_start", res.Diagnoses[0].Remediation)
	require.NotNil(t, res.Remediation)
	require.True(t, res.Remediation.Recovered, "%+v", *res.Remediation)
	st := h.UnitState(t, "e2e-startlimit.service")
	require.Equal(t, "active", st["ActiveState"], "%v", st)

	c.Step(t, h, "a second look says stable")
	res = runCrashloop(t, c, store, "-p", "host="+h.Name, "-p", "unit=e2e-startlimit.service", "-p", "watch_seconds=3")
	diagnoses, _ = res.ids()
	require.Equal(t, []string{"stable"}, diagnoses)
}
