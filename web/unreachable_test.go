package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/web"
)

// The run page says first which hosts could not be reached, lists the
// step runs that failed the same way on one host as one line before the
// steps, and each of those runs links to that line instead of repeating
// the error in its summary; a step that failed alone keeps its error.
func TestRunPageSummarisesAnUnreachableHost(t *testing.T) {
	t.Parallel()
	const keyErr = "connect to gpu-1 (10.0.0.1:22): ssh: handshake failed: ssh: unable to authenticate"
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	run, err := st.CreateRun(t.Context(), store.Run{Runbook: "health", Trigger: store.TriggerCLI, RequestedBy: "bob"})
	require.NoError(t, err)
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rep := &runbooks.Report{RunID: run.ID, Runbook: "health", StartedAt: start, VerdictAt: start, FinishedAt: start.Add(time.Second),
		Outcome: runbooks.OutcomeInconclusive}
	for _, id := range []string{"health", "unit", "logs"} {
		rep.Steps = append(rep.Steps,
			&runbooks.TargetRun{Step: id, Check: "c", Target: "prefill", Host: "gpu-0", Status: step.OK, StartedAt: start},
			&runbooks.TargetRun{Step: id, Check: "c", Target: "decode", Host: "gpu-1", Status: step.Error, StartedAt: start, Error: "read " + id + " on gpu-1: " + keyErr})
	}
	rep.Steps = append(rep.Steps, &runbooks.TargetRun{Step: "probe", Check: "c", Target: "prefill", Host: "gpu-0", Status: step.Error, StartedAt: start, Error: "probe refused"})
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	_, err = st.FinishRun(t.Context(), run.ID, store.RunFinished, store.OutcomeInconclusive, data)
	require.NoError(t, err)
	signer, err := web.NewSigner(linkKey, time.Hour, nil)
	require.NoError(t, err)
	site, err := web.New(web.Config{Signer: signer, Logger: quiet(),
		Proxy: &web.ProxyTrust{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}, st)
	require.NoError(t, err)

	req := httptest.NewRequest(http.MethodGet, "/runs/"+run.ID, nil)
	req.Header.Set("X-Forwarded-User", "alice")
	w := httptest.NewRecorder()
	site.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code)
	page := w.Body.String()

	reach := `<p class="s-bad unreachable">cannot reach gpu-1 (3 step runs stopped): ` + keyErr + `</p>`
	require.Contains(t, page, reach)
	require.Less(t, strings.Index(page, reach), strings.Index(page, `id="findings"`), "the host comes before the findings")
	require.Contains(t, page, `<li id="fold-1" class="s-bad">3 steps on gpu-1 (health, unit, logs): `+keyErr+`</li>`)
	require.Equal(t, 3, strings.Count(page, `<a href="#fold-1">one of 3 failing the same way on gpu-1</a></summary>`))
	require.Contains(t, page, "c on prefill@gpu-0 · 0s · probe refused</summary>")
	require.NotContains(t, page, "· read health on gpu-1", "a folded run's summary does not repeat the error")
}
