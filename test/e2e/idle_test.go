//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/test/e2e/testhost"
)

// TestServeLetsIdleHostsGo: runbot serve audits a systemd host on a
// schedule with ssh_idle_timeout set. Between audits the host holds no
// login from runbot (its sshd lists only the test's own connection), and
// each audit dials anew and reads the host as well as a kept connection
// would: its probes through tunnels, unit state over D-Bus, the journal in
// the run's shared shell.
func TestServeLetsIdleHostsGo(t *testing.T) {
	c := testhost.Up(t, 1)
	h := c.Hosts[0]
	dir := t.TempDir()
	addr := freeAddr(t)
	// The knob under test is short so that the test is; the schedule
	// leaves a gap of about 10 s between an audit's end and the next.
	cfg := fmt.Sprintf(`listen: %s
store: %s
inventory: %s
log: {format: text, level: info}
ssh_idle_timeout: 4s
schedules:
  - {runbook: sglang-pd-audit, cron: "*/15 * * * * *", params: {deployment: %s}, post: always}
`, addr, filepath.Join(dir, "runbot.db"), c.Inventory, h.Deployment)
	c.Step(t, h, "runbot serve audits %s every 15 s and lets its connection go after 4 s unused", h.Name)
	logs := runServe(t, c, dir, "runbot serve", addr, cfg)
	base := "http://" + addr

	// audits returns the audits finished so far, by outcome, and the
	// host's successful dials.
	audits := func() (map[string]float64, float64) {
		m := scrape(t, base)
		outcomes := map[string]float64{}
		for labels, v := range m["runbot_runs_total"] {
			l := labelMap(labels)
			if l["runbook"] == "sglang-pd-audit" {
				outcomes[l["outcome"]] += v
			}
		}
		return outcomes, m["runbot_ssh_dials_total"][`host="`+h.Name+`",outcome="ok"`]
	}
	total := func(o map[string]float64) (n float64) {
		for _, v := range o {
			n += v
		}
		return n
	}

	for round := 1; round <= 2; round++ {
		testhost.Eventually(t, 60*time.Second, fmt.Sprintf("audit %d to finish", round), func() (bool, string) {
			o, dials := audits()
			return total(o) >= float64(round), fmt.Sprintf("audits %v, dials %v\n%s", o, dials, logs.String())
		})
		c.Step(t, h, "audit %d finished; the host's sshd soon lists only the test's own connection", round)
		testhost.Eventually(t, 9*time.Second, "runbot's SSH login to leave the host", func() (bool, string) {
			// The test reaches the host through one OpenSSH master: that
			// connection is the only one left once runbot's has gone.
			out := strings.TrimSpace(h.Run(t, "ss -Htn state established '( sport = :22 )'"))
			return out != "" && !strings.Contains(out, "\n"), out
		})
	}

	o, dials := audits()
	require.Equal(t, map[string]float64{"ok": total(o)}, o, "every audit read the host and found it healthy")
	// A connection kept between audits would have been dialed once.
	require.GreaterOrEqual(t, dials, 2.0, "each audit after an idle gap dials anew")
	require.LessOrEqual(t, dials, total(o)+1, "no more than one dial per audit (the next may be dialing now)")
}

// labelMap reads scrape's `k="v",…` labels back into a map.
func labelMap(labels string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}
