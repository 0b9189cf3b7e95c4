package runbooks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
)

// auditRunbook runs five commands on one host, all in the same wave; %s is
// where the test puts the ssh option.
const auditRunbook = `
name: audit
params: {deployment: {type: deployment, required: true}}
%s
steps:
  - {id: c1, check: command, target: a, with: {cmd: "echo one"}}
  - {id: c2, check: command, target: a, with: {cmd: "echo two >&2; exit 3", expect_exit: 3}}
  - {id: c3, check: command, target: a, with: {cmd: "printf 'out 1\\nend 1\\n'"}}
  - {id: c4, check: command, target: a, with: {cmd: "cat /proc/loadavg >/dev/null && echo load"}}
  - {id: c5, check: command, target: a, with: {cmd: "echo \"it's\"; echo x | tr x y"}}
findings:
  - {id: all_ok, severity: info, when: 'steps.c1.ok && steps.c2.ok && steps.c3.ok && steps.c4.ok && steps.c5.ok', summary: all five ran}
`

// TestSharedSessionOpensOneSession runs the same five-step runbook on a
// real sshd with and without ssh.shared_session: one session against five,
// and the same steps, outputs and findings either way.
func TestSharedSessionOpensOneSession(t *testing.T) {
	type result struct {
		outs     map[string]checks.CommandOutput
		findings []string
	}
	cases := []struct {
		name     string
		option   string
		sessions int
	}{
		{name: "shared", option: "ssh: {shared_session: true}", sessions: 1},
		{name: "not shared", option: "", sessions: 5},
	}
	results := map[string]result{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := sshdtest.Start(t, sshdtest.Options{})
			other := fmt.Sprintf("  other:\n    address: %s\n    port: %d\n    user: %s\n    identity_files: [%s]\n    host_keys: [%q]", srv.Host, srv.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey)
			inv := sshInventory(t, srv, other)
			rb, problems := runbooks.Parse("audit.yaml", []byte(strings.Replace(auditRunbook, "%s", tc.option, 1)))
			require.Empty(t, problems)
			require.Equal(t, tc.option != "", rb.SSH.SharedSession)
			pool := sshrun.NewPool()
			t.Cleanup(func() { _ = pool.Close() })
			e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
			p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "d"})
			require.NoError(t, err)

			rep := e.Run(t.Context(), p, engine.RunOptions{})

			r := result{outs: map[string]checks.CommandOutput{}}
			for _, s := range rep.Steps {
				require.Equal(t, step.OK, s.Status, "%s: %s", s.Step, s.Error)
				r.outs[s.Step] = s.Values.(checks.CommandOutput)
			}
			for _, f := range rep.Findings {
				r.findings = append(r.findings, f.ID)
			}
			results[tc.name] = r
			require.Equal(t, tc.sessions, strings.Count(srv.Log(), "Starting session:"), srv.Log())
		})
	}
	shared, plain := results["shared"], results["not shared"]
	require.Equal(t, plain, shared, "sharing a session must not change what the run reports")
	require.Equal(t, checks.CommandOutput{ExitCode: 3, OK: true, Stderr: "two\n", Values: map[string]string{}}, shared.outs["c2"])
	require.Equal(t, "out 1\nend 1\n", shared.outs["c3"].Stdout)
	require.Equal(t, "it's\ny\n", shared.outs["c5"].Stdout)
	require.Equal(t, []string{"all_ok"}, shared.findings)
}
