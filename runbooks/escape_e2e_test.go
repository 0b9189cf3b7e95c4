package runbooks_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
)

// TestWedgeChatProbeSendsHostileModelIntact runs the shipped sglang-pd-wedge
// runbook's chat step against a real HTTP server, with model names that
// used to break its JSON body (`-p model='de"fault'`) or add fields to it:
// the server receives valid JSON whose model is the name, and nothing else
// the name tried to add.
func TestWedgeChatProbeSendsHostileModelIntact(t *testing.T) {
	models := []string{`de"fault`, `x", "max_tokens": 99999, "y": "`, `back\slash`, "new\nline", `</script>`, `{{ .params.deployment }}`, "☃"}
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = b
				mu.Unlock()
				if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Content-Type") != "application/json" {
					http.Error(w, "unexpected request", http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = fmt.Fprint(w, "data: {\"choices\": [{\"delta\": {\"content\": \"ok\"}}]}\n\ndata: [DONE]\n\n")
			}))
			defer srv.Close()

			rep := runWedgeChat(t, srv.URL, model)
			require.Len(t, rep.Steps, 1)
			chat := rep.Steps[0]
			require.Equal(t, "chat", chat.Step)
			require.Equal(t, step.OK, chat.Status, chat.Error)
			require.True(t, chat.Values.(checks.HTTPProbeOutput).OK, chat.Evidence)

			mu.Lock()
			defer mu.Unlock()
			var body map[string]any
			require.NoError(t, json.Unmarshal(got, &body), "the server got %s", got)
			require.Equal(t, model, body["model"])
			require.Equal(t, 16.0, body["max_tokens"])
			// rid and user are the probe's request id, added to every JSON
			// object body (tag_body).
			require.ElementsMatch(t, []string{"model", "messages", "max_tokens", "stream", "rid", "user"}, slices.Collect(maps.Keys(body)))
		})
	}
}

// runWedgeChat runs only the chat step of the shipped runbook, with the
// deployment's router at url.
func runWedgeChat(t *testing.T, url, model string) *runbooks.Report {
	t.Helper()
	inv := filepath.Join(t.TempDir(), "inventory.yaml")
	roles := []string{}
	for _, r := range []string{"router", "prefill", "decode"} {
		roles = append(roles, fmt.Sprintf("      %s: {host: here, unit: %s, url: %q}", r, r, url))
	}
	require.NoError(t, os.WriteFile(inv, []byte("hosts:\n  here:\n    transport: local\ndeployments:\n  e2e:\n    roles:\n"+strings.Join(roles, "\n")+"\n"), 0o600))
	in, err := inventory.Load(inv)
	require.NoError(t, err)
	cat, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	rb, err := cat.Get("sglang-pd-wedge")
	require.NoError(t, err)
	e := &engine.Engine{Targets: &bind.InventoryTargets{Inventory: in, Runners: bind.LocalRunners{}}}
	p, err := e.Prepare(t.Context(), rb, map[string]string{"deployment": "e2e", "model": model, "probe_timeout": "10s"})
	require.NoError(t, err)
	return e.Run(t.Context(), p, engine.RunOptions{Only: []string{"chat"}})
}

// TestLintPointsAtTheAction: an escaping problem is reported at the action
// it is about, as file:line:col.
func TestLintPointsAtTheAction(t *testing.T) {
	src := `name: probe
params:
  host: {type: host, required: true}
  model: {type: string, default: m}
steps:
  - id: chat
    check: http_probe
    target: host
    with:
      body: '{"model": "{{ .params.model }}", "n": 1 {{ .params.model }}}'
`
	_, problems := runbooks.Parse("probe.yaml", []byte(src))
	require.Len(t, problems, 1)
	require.Equal(t, `probe.yaml:10:54: step chat: body: cannot escape {{ .params.model }} for JSON: `+
		`it would follow a complete value; a comma is missing, or the value belongs inside a string`, problems[0].String())
	require.Equal(t, "{{ .params.model }}}'", strings.Split(src, "\n")[9][53:], "column 54 is where the action starts")
}
