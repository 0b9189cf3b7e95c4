package incident

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var t0 = time.Date(2026, 6, 18, 20, 44, 12, 0, time.UTC)

// wedgeIncident is an incident as Load would gather it for a wedge that
// was fixed after one approval, with output that tries to break the
// Markdown (backticks, pipes, a heading).
func wedgeIncident() *Incident {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rep := &runbooks.Report{
		RunID: "r-20260618-204412-3f9a1c", Runbook: "sglang-pd-wedge", Title: "SGLang PD decode wedge",
		Params: map[string]string{"deployment": "dsv4"}, StartedAt: t0, VerdictAt: at(9), FinishedAt: at(36), Outcome: runbooks.OutcomeCritical,
		Findings: []runbooks.FindingResult{
			{ID: "alive_not_working", Severity: runbooks.Critical, Summary: "/health says 200 but a chat request hung with 0 bytes", Evidence: []string{
				"[health@router] GET /health -> 200 in 3ms", "[chat@router] POST /v1/chat/completions: no first byte in 35s (0 bytes) | timeout"}},
			{ID: "decode_stalled", Severity: runbooks.Critical, Summary: "decode logged no batch for 14m", Evidence: func() []string {
				var out []string
				for i := range 15 {
					out = append(out, fmt.Sprintf("[last_batch@decode] line %d ``` # not a heading", i))
				}
				return out
			}()},
		},
		Diagnoses: []runbooks.DiagnosisResult{{ID: "pd_transfer_wedge", Severity: runbooks.Critical, Summary: "Decode stopped batching: KV transfers from prefill never complete",
			Remediation: "disable_overlap_and_restart", Findings: []string{"alive_not_working", "decode_stalled"}}},
	}
	body := remediation.PlanBody{Runbook: "sglang-pd-wedge", Remediation: "disable_overlap_and_restart", Diagnosis: "pd_transfer_wedge", Deployment: "dsv4",
		Actions: []remediation.PlannedAction{
			{Index: 0, Action: "config_edit", Target: "decode", Plan: actions.Plan{Summary: "add --disable-overlap-schedule to serve_decode.sh on gpu-2", Reversible: true,
				Diff: "--- serve_decode.sh\n+++ serve_decode.sh\n@@ -3 +3 @@\n-python -m sglang.launch_server \\\n+python -m sglang.launch_server --disable-overlap-schedule \\"}},
			{Index: 1, Action: "systemd_restart", Target: "decode", Plan: actions.Plan{Summary: "restart sglang-decode.service on gpu-2"}, RerunAfterRollback: true},
		},
		Verify: []string{"health", "chat", "last_batch"}, Rollback: "on_failed_verify"}
	plan := store.Plan{ID: "p-1", RunID: rep.RunID, Remediation: body.Remediation, Diagnosis: body.Diagnosis, Deployment: "dsv4", Hash: "abcdef0123456789",
		RequestedBy: "alertmanager", State: store.PlanDone, CreatedAt: at(37),
		Policy: store.Policy{Approvers: []string{"@sre-oncall"}, TwoPerson: true, ExpiresAt: at(37 + 900)}}
	return &Incident{
		Run: store.Run{ID: rep.RunID, Runbook: rep.Runbook, Trigger: store.TriggerAlert, RequestedBy: "alertmanager", Params: rep.Params,
			Status: store.RunFinished, Outcome: store.OutcomeCritical, StartedAt: t0, FinishedAt: at(36)},
		Report: rep,
		Alert: &Alert{Labels: map[string]string{"alertname": "SGLangRequestsHanging", "deployment": "dsv4"}, Annotations: map[string]string{"summary": "chat requests hang | p99 > 30s"},
			StartsAt: t0.Add(-4 * time.Minute), Status: "firing"},
		Plans: []Plan{{
			Plan: plan, Body: &body,
			Approvals: []store.Approval{{PlanID: "p-1", User: "U0ALICE", Decision: store.Approve, PlanHash: plan.Hash, At: at(95)}},
			Actions: []store.ActionRecord{
				{PlanID: "p-1", Index: 0, Target: "decode", Action: "config_edit", State: store.ActionDone, StartedAt: at(110), FinishedAt: at(111)},
				{PlanID: "p-1", Index: 1, Target: "decode", Action: "systemd_restart", State: store.ActionDone, StartedAt: at(111), FinishedAt: at(125)},
			},
			Outcome: "verified: the symptom is gone", Verified: at(125), Ended: at(140),
		}},
	}
}

// The postmortem draft of a fixed wedge: compared with the golden file
// (go test ./incident -update rewrites it).
func TestMarkdownGolden(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, wedgeIncident().Markdown(&buf, "https://runbot.example.com/runs/r-20260618-204412-3f9a1c"))
	golden := filepath.Join("testdata", "postmortem.md")
	if *update {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), buf.String())
}

// The draft tells the story in order and keeps command output from
// breaking out of its code blocks or table cells.
func TestMarkdownStructure(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, wedgeIncident().Markdown(&buf, ""))
	md := buf.String()
	order := []string{"alert SGLangRequestsHanging started firing", "runbook sglang-pd-wedge started", "diagnosis pd\\_transfer\\_wedge",
		"remediation disable\\_overlap\\_and\\_restart proposed", "approved disable\\_overlap\\_and\\_restart", "action 1: config\\_edit on decode started",
		"verification started", "remediation done: verified: the symptom is gone"}
	last := -1
	for _, s := range order {
		i := strings.Index(md, s)
		require.Greater(t, i, last, "%q comes after the previous event", s)
		last = i
	}
	require.Contains(t, md, "````\n[last_batch@decode] line 0 ``` # not a heading", "a longer fence holds output with backticks")
	require.Contains(t, md, "_3 more line(s) in the full report._")
	require.Contains(t, md, "chat requests hang \\| p99 \\> 30s", "a pipe does not split the table cell")
	require.Contains(t, md, "```diff\n--- serve_decode.sh")
	require.NotContains(t, md, "Full report:", "no URL, no link")
}

// Redacted hides secrets in every part of an incident and leaves the
// original as it was.
func TestRedacted(t *testing.T) {
	t.Parallel()
	inc := wedgeIncident()
	inc.Report.Steps = []*runbooks.TargetRun{{Step: "dump", Target: "decode", Values: map[string]any{"stdout": "password=hunter2"}, Evidence: []string{"token: abc123"}}}
	inc.Plans[0].Actions[0].Detail = json.RawMessage(`{"stderr":"api_key=zzz"}`)
	inc.Audit = []store.AuditEvent{{Kind: "run.created", Actor: "bob", Detail: json.RawMessage(`{"params":{"note":"secret=s3"}}`)}}
	r, err := redact.New(nil)
	require.NoError(t, err)
	out, err := inc.Redacted(r)
	require.NoError(t, err)
	all, err := json.Marshal(out)
	require.NoError(t, err)
	for _, s := range []string{"hunter2", "abc123", "zzz", "s3\""} {
		require.NotContains(t, string(all), s)
	}
	require.Equal(t, "Decode stopped batching: KV transfers from prefill never complete", out.Report.Diagnoses[0].Summary)
	require.Equal(t, t0, out.Run.StartedAt)
	require.Equal(t, "password=hunter2", inc.Report.Steps[0].Values.(map[string]any)["stdout"])
	_, err = inc.Redacted(nil)
	require.Error(t, err)
}
