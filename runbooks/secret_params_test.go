package runbooks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// TestSecretParamsAreUsedButNeverShown runs a runbook whose secret token
// a command prints, an expression compares, a summary quotes and the fix
// writes: the checks and the fix get the real value, and nothing the run
// keeps or shows holds it — the stored run and report, the progress
// events, the plan as shown, what applying said, its reports, and the
// incident the pages and postmortems read.
func TestSecretParamsAreUsedButNeverShown(t *testing.T) {
	const token = "tok-7f3a9c2e51b8"
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state"), []byte("state stale\n"), 0o600))
	inv, err := inventory.Parse("inventory.yaml", []byte("hosts:\n  here: {transport: local}\n"))
	require.NoError(t, err)
	cat, problems, err := catalog.Load("testdata/secret")
	require.NoError(t, err)
	require.Empty(t, problems)
	rb, err := cat.Get("rotate")
	require.NoError(t, err)
	st, err := store.Open(t.Context(), filepath.Join(dir, "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	eng := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: inv, Runners: bind.LocalRunners{}}}
	rem := &remediation.Remediator{Engine: eng, Store: st, Catalog: cat, Groups: remediation.Groups{"sre": {"alice", "bob"}}}
	rec := &record.Recorder{Engine: eng, Runs: st, Remediator: rem}

	noSecret := func(what string, v any) string {
		t.Helper()
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.NotContains(t, string(b), token, "%s holds the secret param's value", what)
		return string(b)
	}

	// What a run would do is shown with the value hidden.
	p, err := eng.Prepare(t.Context(), rb, map[string]string{"dir": dir, "token": token})
	require.NoError(t, err)
	require.Contains(t, noSecret("the explained steps", eng.Explain(p)), `printf \"auth %s\\n\" [redacted]`)
	acts, err := eng.ExplainRemediation(t.Context(), p, rb.Remediations[0])
	require.NoError(t, err)
	require.Contains(t, noSecret("the explained fix", acts), "echo rotated [redacted]")

	// A value too short to hide is refused without being echoed.
	_, err = eng.Prepare(t.Context(), rb, map[string]string{"dir": dir, "token": "hunter2"})
	require.ErrorContains(t, err, "param token: a secret value must be at least 8 characters long")
	require.NotContains(t, err.Error(), "hunter2")

	var mu sync.Mutex
	var events []engine.Event
	out := rec.Record(t.Context(), record.Record{
		Book: rb, Runbook: rb.Name, Params: map[string]string{"dir": dir, "token": token, "endpoint": "https://vault.example/v1?t=" + token}, Trigger: store.TriggerCLI, RequestedBy: "carol",
		Progress: func(ev engine.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		},
	})
	require.NoError(t, out.Err)
	require.NoError(t, out.StartErr)
	require.NoError(t, out.ProposeErr)

	// The expression compared the real value, so the finding held.
	require.Equal(t, runbooks.OutcomeCritical, out.Report.Outcome)
	require.Equal(t, "stale_token", out.Report.Diagnoses[0].ID)
	shown := noSecret("the report", out.Report)
	require.Contains(t, shown, "The token [redacted] is stale.")
	require.Contains(t, shown, "Token [redacted] must be rotated.")
	require.Contains(t, shown, "auth [redacted]")
	require.Equal(t, "[redacted]", out.Report.Params["token"])
	require.Equal(t, dir, out.Report.Params["dir"])
	mu.Lock()
	require.NotEmpty(t, events)
	noSecret("the progress events", events)
	mu.Unlock()

	run, err := st.GetRun(t.Context(), out.Run.ID)
	require.NoError(t, err)
	require.Equal(t, "[redacted]", run.Params["token"])
	require.Equal(t, "https://vault.example/v1?t=[redacted]", run.Params["endpoint"], "a param that quotes the secret hides it")
	noSecret("the stored run", run)

	// The plan keeps the value, as applying needs it, and shows none.
	require.NotNil(t, out.Proposal)
	require.Equal(t, token, out.Proposal.Body.Params["token"])
	require.Equal(t, []string{"token"}, out.Proposal.Body.Secret)
	plan := noSecret("the plan as shown", out.Proposal.Body.Shown())
	require.Contains(t, plan, "echo rotated [redacted]")

	_, err = rem.Vote(t.Context(), out.Proposal.Plan.ID, "bob", true, out.Proposal.Plan.Hash)
	require.NoError(t, err)
	var said []remediation.ApplyEvent
	res, err := rem.Apply(t.Context(), out.Proposal.Plan.ID, "bob", func(ev remediation.ApplyEvent) { said = append(said, ev) })
	require.NoError(t, err)
	require.True(t, res.Recovered, res.Message)
	rotated, err := os.ReadFile(filepath.Join(dir, "rotated"))
	require.NoError(t, err)
	require.Equal(t, token+"\n", string(rotated), "the fix ran with the real value")
	applied := noSecret("what applying said", said)
	require.Contains(t, applied, "rotated [redacted]")
	noSecret("the apply result", res)

	// The store keeps what the action printed as it was (rollback may
	// need it); the incident that pages and postmortems show hides it.
	inc, err := incident.Load(t.Context(), st, out.Run.ID)
	require.NoError(t, err)
	require.Len(t, inc.Plans, 1)
	require.NotEmpty(t, inc.Plans[0].Actions)
	require.NotEmpty(t, inc.Audit)
	page := noSecret("the incident", inc)
	require.Contains(t, page, "rotated [redacted]")
}
