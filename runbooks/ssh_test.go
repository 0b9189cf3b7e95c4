package runbooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/sshdtest"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/remote/sshrun"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/failures"
)

// fanoutRunbook runs one command on three roles of a deployment.
const fanoutRunbook = `
name: fanout
params:
  deployment: {type: deployment, required: true}
  text: {type: string, default: "hello"}
steps:
  - id: echo
    check: command
    target: [a, b, c]
    with: {cmd: 'printf %s {{ .params.text }}'}
findings:
  - id: all_echoed
    severity: info
    when: all(steps.echo.targets, .stdout == params.text)
    summary: every host echoed
`

// sshInventory writes an inventory whose roles a and b are on a real sshd
// (host key pinned) and role c on a second host given by cHost.
func sshInventory(t *testing.T, srv *sshdtest.Server, cHost string) *inventory.Inventory {
	t.Helper()
	y := fmt.Sprintf(`
hosts:
  good:
    address: %s
    port: %d
    user: %s
    identity_files: [%s]
    host_keys: [%q]
%s
deployments:
  d:
    roles:
      a: {host: good}
      b: {host: good}
      c: {host: other}
`, srv.Host, srv.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey, cHost)
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(path, []byte(y), 0o600))
	inv, err := inventory.Load(path)
	require.NoError(t, err)
	return inv
}

func runFanout(t *testing.T, inv *inventory.Inventory, params map[string]string) *runbooks.Report {
	t.Helper()
	rb, problems := runbooks.Parse("fanout.yaml", []byte(fanoutRunbook))
	require.Empty(t, problems)
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(t.Context(), rb, params)
	require.NoError(t, err)
	return e.Run(t.Context(), p, engine.RunOptions{})
}

func TestRunOverSSHQuotesHostileParams(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	other := fmt.Sprintf("  other:\n    address: %s\n    port: %d\n    user: %s\n    identity_files: [%s]\n    host_keys: [%q]", srv.Host, srv.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey)
	inv := sshInventory(t, srv, other)
	for _, hostile := range []string{"; touch /tmp/runbot-pwned", "$(id)", "`id`", "a\nb", "it's", "☃"} {
		rep := runFanout(t, inv, map[string]string{"deployment": "d", "text": hostile})
		for _, s := range rep.Steps {
			require.Equal(t, step.OK, s.Status, "%s: %s", s.Target, s.Error)
			require.Equal(t, hostile, s.Values.(checks.CommandOutput).Stdout)
		}
		require.Len(t, rep.Findings, 1)
	}
	require.NoFileExists(t, "/tmp/runbot-pwned")
}

// TestUnreachableHostIsPerHost: a host that is down fails only its own
// target; the others finish, and the finding that needs all of them is
// inconclusive rather than false.
func TestUnreachableHostIsPerHost(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	down := fmt.Sprintf("  other:\n    address: 127.0.0.1\n    port: 1\n    user: %s\n    identity_files: [%s]\n    host_keys: [%q]\n    connect_timeout: 2s", srv.User, srv.ClientKeyFile, srv.HostPublicKey)
	rep := runFanout(t, sshInventory(t, srv, down), map[string]string{"deployment": "d"})
	byTarget := map[string]*runbooks.TargetRun{}
	for _, s := range rep.Steps {
		byTarget[s.Target] = s
	}
	require.Equal(t, step.OK, byTarget["a"].Status)
	require.Equal(t, step.OK, byTarget["b"].Status)
	require.Equal(t, step.Error, byTarget["c"].Status)
	require.Contains(t, byTarget["c"].Error, "other")
	require.Contains(t, byTarget["c"].ConnectError, "connect to other (127.0.0.1:1)", "the engine marks the typed connect error")
	require.Contains(t, byTarget["c"].Error, byTarget["c"].ConnectError)
	unreachable := failures.Unreachable(rep.Steps)
	require.Len(t, unreachable, 1)
	require.Equal(t, byTarget["c"].ConnectError, unreachable[0].Cause)
	// The JSON form has no marker; read back, the text says the same.
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	require.NotContains(t, string(b), "ConnectError")
	var stored runbooks.Report
	require.NoError(t, json.Unmarshal(b, &stored))
	require.Equal(t, unreachable, failures.Unreachable(stored.Steps))
	require.Empty(t, rep.Findings)
	require.Len(t, rep.Inconclusive, 1)
	require.Equal(t, runbooks.OutcomeInconclusive, rep.Outcome)
}

// TestChangedHostKeyIsRefused: a host whose key is not the pinned one is
// refused by name and fingerprint, and nothing runs there.
func TestChangedHostKeyIsRefused(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	impostor := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{srv.ClientPublicKey}})
	changed := fmt.Sprintf("  other:\n    address: %s\n    port: %d\n    user: %s\n    identity_files: [%s]\n    host_keys: [%q]", impostor.Host, impostor.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey)
	rep := runFanout(t, sshInventory(t, srv, changed), map[string]string{"deployment": "d"})
	for _, s := range rep.Steps {
		if s.Target == "c" {
			require.Equal(t, step.Error, s.Status)
			require.Contains(t, s.Error, "other")
			require.Contains(t, s.Error, "SHA256:")
			t.Log(s.Error)
		} else {
			require.Equal(t, step.OK, s.Status)
		}
	}
}

// TestProbeThroughUnreachableHostIsNotAFinding: when the SSH connection to
// the host fails, an HTTP probe through it could not observe anything; it
// must not report "connection refused" (which would read as "service down").
func TestProbeThroughUnreachableHostIsNotAFinding(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	impostor := sshdtest.Start(t, sshdtest.Options{AuthorizedKeys: []string{srv.ClientPublicKey}})
	y := fmt.Sprintf(`
hosts:
  h: {address: %s, port: %d, user: %s, identity_files: [%s], host_keys: [%q]}
deployments:
  d:
    roles:
      web: {host: h, url: "http://127.0.0.1:9"}
`, impostor.Host, impostor.Port, srv.User, srv.ClientKeyFile, srv.HostPublicKey)
	path := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(path, []byte(y), 0o600))
	inv, err := inventory.Load(path)
	require.NoError(t, err)
	rb, problems := runbooks.Parse("probe.yaml", []byte(`
name: probe
params: {deployment: {type: deployment, required: true}}
steps:
  - {id: health, check: http_probe, target: web, with: {path: /health}}
findings:
  - {id: down, severity: critical, when: '!steps.health.connected', summary: down}
`))
	require.Empty(t, problems)
	pool := sshrun.NewPool()
	t.Cleanup(func() { _ = pool.Close() })
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: &bind.PoolRunners{Inventory: inv, Pool: pool}}}
	p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "d"})
	require.NoError(t, err)
	rep := e.Run(t.Context(), p, engine.RunOptions{})
	require.Equal(t, step.Error, rep.Steps[0].Status)
	require.Contains(t, rep.Steps[0].Error, "host key")
	require.Empty(t, rep.Findings, "an SSH failure is not a service that refuses connections")
	require.Equal(t, runbooks.OutcomeInconclusive, rep.Outcome)
}
