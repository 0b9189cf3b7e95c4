package slackchat

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

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// golden compares the Block Kit rendering of m with testdata/NAME.golden.json.
func golden(t *testing.T, name string, m chat.Message) []slack.Block {
	t.Helper()
	blocks := renderBlocks(m)
	got := marshalBlocks(t, map[string]any{"text": fallbackText(m), "blocks": blocks})
	path := filepath.Join("testdata", name+".golden.json")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./bot -run %s -update to create it", t.Name())
	require.Equal(t, string(want), string(got))
	requireWithinLimits(t, blocks)
	return blocks
}

// marshalBlocks encodes as Slack receives it, without Go's HTML escaping,
// so goldens read as the text Slack gets.
func marshalBlocks(t *testing.T, v any) []byte {
	t.Helper()
	// slack-go's blocks marshal themselves with HTML escaping; decode and
	// encode again to undo it.
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var generic any
	require.NoError(t, json.Unmarshal(raw, &generic))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(generic))
	return b.Bytes()
}

// requireWithinLimits checks Slack's Block Kit limits on rendered blocks.
func requireWithinLimits(t *testing.T, blocks []slack.Block) {
	t.Helper()
	require.LessOrEqual(t, len(blocks), maxBlocks)
	for i, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			require.LessOrEqual(t, len([]rune(b.Text.Text)), maxSectionText, "block %d", i)
			require.Equal(t, 0, strings.Count(b.Text.Text, "```")%2, "block %d has an unclosed code fence", i)
		case *slack.HeaderBlock:
			require.LessOrEqual(t, len([]rune(b.Text.Text)), maxHeaderText)
		case *slack.ContextBlock:
			require.LessOrEqual(t, len(b.ContextElements.Elements), maxContextElements)
		case *slack.ActionBlock:
			for _, e := range b.Elements.ElementSet {
				btn := e.(*slack.ButtonBlockElement)
				require.LessOrEqual(t, len(btn.Value), maxButtonValue)
				require.LessOrEqual(t, len([]rune(btn.Text.Text)), maxButtonText)
			}
		}
	}
}

func wedgeReport(tb testing.TB) *runbooks.Report {
	tb.Helper()
	data, err := os.ReadFile("testdata/reports/pd-wedge.json")
	require.NoError(tb, err)
	var rep runbooks.Report
	require.NoError(tb, json.Unmarshal(data, &rep))
	return &rep
}

var fixedPlanTime = time.Date(2026, 6, 18, 20, 44, 49, 0, time.UTC)

// wedgeRun is the state of the wedge's run with its proposal, as the
// dispatcher holds it.
type wedgeRun struct {
	view *runview.State
	prop *remediation.Proposal
	plan store.Plan
}

func wedgeState(tb testing.TB) *wedgeRun {
	tb.Helper()
	rep := wedgeReport(tb)
	run := store.Run{ID: rep.RunID, Runbook: rep.Runbook, Trigger: store.TriggerChat, RequestedBy: "U0REQ", Params: rep.Params, Status: store.RunFinished}
	view := runview.New(run, nil)
	view.Title, view.StepOrder = rep.Title, []string{"health", "chat", "counters", "last_batch", "backend", "overlap"}
	view.SetReport(rep)
	body := remediation.PlanBody{
		Runbook: "sglang-pd-wedge", Remediation: "disable_overlap_and_restart", Diagnosis: "pd_transfer_wedge", Deployment: "dsv4",
		Params: rep.Params, Verify: []string{"health", "chat", "last_batch"}, Rollback: "on_failed_verify",
		Actions: []remediation.PlannedAction{
			{Index: 0, Action: "config_edit", Target: "decode@gpu-1", Plan: actions.Plan{
				Summary: "edit /root/serve_dsv4_decode.sh on decode@gpu-1: add --disable-overlap-schedule", Reversible: true,
				Diff: "--- /root/serve_dsv4_decode.sh\n+++ /root/serve_dsv4_decode.sh\n@@ -12,3 +12,4 @@\n   --disaggregation-mode decode \\\n   --disaggregation-transfer-backend nixl \\\n+  --disable-overlap-schedule \\\n   --port 30002\n"}},
			{Index: 1, Action: "systemd_restart", Target: "decode@gpu-1", RerunAfterRollback: true, Plan: actions.Plan{Summary: "restart sglang-dsv4-decode.service on gpu-1", Commands: []string{"systemctl restart sglang-dsv4-decode.service"}}},
		},
	}
	plan := store.Plan{ID: "p-20260618-204449-77aa01", RunID: rep.RunID, Remediation: body.Remediation, Deployment: "dsv4",
		Hash: "9d8699a7a3a9b7bc69e3c8bd20ccb61fb1acde15ca21ef0159fb6db7721c94b4", RequestedBy: "U0REQ", State: store.PlanProposed, CreatedAt: fixedPlanTime,
		Policy: store.Policy{Approvers: []string{"@sre-oncall"}, TwoPerson: true, ExpiresAt: fixedPlanTime.Add(15 * time.Minute)}}
	prop := &remediation.Proposal{Plan: plan, Body: body}
	view.Proposal, view.Plan = prop, plan
	return &wedgeRun{view: view, prop: prop, plan: plan}
}

func TestGoldenCriticalRunWithApprovalButtons(t *testing.T) {
	t.Parallel()
	rs := wedgeState(t)
	blocks := golden(t, "wedge-proposed", rs.view.Message())
	// The buttons carry the plan id and the hash of the plan shown.
	last := blocks[len(blocks)-1].(*slack.ActionBlock)
	for _, e := range last.Elements.ElementSet {
		require.Equal(t, rs.plan.ID+"|"+rs.plan.Hash, e.(*slack.ButtonBlockElement).Value)
	}
}

func TestGoldenRemediationApplied(t *testing.T) {
	t.Parallel()
	rs := wedgeState(t)
	rs.plan.State = store.PlanDone
	approvals := []store.Approval{{PlanID: rs.plan.ID, User: "U0AAA", Decision: store.Approve, PlanHash: rs.plan.Hash, At: fixedPlanTime.Add(time.Minute)}}
	rs.view.Plan, rs.view.Approvals = rs.plan, approvals
	apply := []remediation.ApplyEvent{
		{Stage: "precheck", Detail: "re-running sglang-pd-wedge to confirm pd_transfer_wedge still holds"},
		{Stage: "action", Detail: "edit /root/serve_dsv4_decode.sh on decode@gpu-1: add --disable-overlap-schedule"},
		{Stage: "action", Detail: "restart sglang-dsv4-decode.service on gpu-1"},
		{Stage: "verify", Detail: "re-running health, chat, last_batch"},
	}
	result := &remediation.ApplyResult{PlanID: rs.plan.ID, State: store.PlanDone, Recovered: true, Message: "verified: the symptom is gone",
		Verify: &runbooks.Report{Findings: []runbooks.FindingResult{{ID: "aborts_are_echoes", Severity: runbooks.Info, Summary: "0 transfer aborts since the restart."}}}}
	rs.view.Apply, rs.view.Result = apply, result
	golden(t, "wedge-applied", rs.view.Message())
}

func TestGoldenRunInProgress(t *testing.T) {
	t.Parallel()
	rs := runview.New(store.Run{ID: "r-20260618-204412-3f9a1c", Runbook: "sglang-pd-wedge", Trigger: store.TriggerAlert, RequestedBy: "alertmanager",
		Params: map[string]string{"deployment": "dsv4"}}, nil)
	rs.Title = "SGLang PD decode wedge"
	rs.StepOrder = []string{"health", "chat", "counters", "last_batch"}
	rs.Event(engine.Event{Kind: "step_finished", Run: &runbooks.TargetRun{Step: "health", Target: "router", Host: "gpu-1", Status: step.OK, Duration: 12 * time.Millisecond}})
	rs.Event(engine.Event{Kind: "step_started", Run: &runbooks.TargetRun{Step: "chat", Target: "router", Host: "gpu-1"}})
	rs.Event(engine.Event{Kind: "step_finished", Run: &runbooks.TargetRun{Step: "counters", Target: "decode", Host: "gpu-1", Status: step.Error, Error: "ssh: handshake failed: host key mismatch"}})
	golden(t, "wedge-running", rs.Message())
}

// Hostile command output renders as text: no mentions, no links, no
// broken code fences.
func TestGoldenHostileOutputIsEscaped(t *testing.T) {
	t.Parallel()
	m := chat.Message{Title: "<!channel> *alert*", Status: chat.StatusWarning,
		Facts: []chat.Fact{{Label: "By", User: "U0REQ"}, {Label: "Fake user", User: "<!here>"}},
		Sections: []chat.Section{{
			Heading: "<https://evil.example|click me>",
			Lines:   []chat.Line{{Text: "<@U0ADMIN> & <#C123> `tick` ~strike~"}},
			Code:    "```\nbreak out\n``` <!everyone>",
		}}}
	blocks := golden(t, "hostile", m)
	raw := string(marshalBlocks(t, blocks))
	for _, bad := range []string{"<!channel>", "<!here>", "<!everyone>", "<https://", "<@U0ADMIN>", "<#C123>", "\n```\nbreak out"} {
		require.NotContains(t, raw, bad)
	}
	require.Contains(t, raw, "<@U0REQ>", "a real user id is a mention")
}

// A huge report stays within Slack's limits and says where the rest is.
func TestGoldenTruncatedToSlackLimits(t *testing.T) {
	t.Parallel()
	m := chat.Message{Title: strings.Repeat("Very long title ", 20), Status: chat.StatusCritical, More: "runbot show r-20260618-204412-3f9a1c"}
	for i := range 12 {
		m.Facts = append(m.Facts, chat.Fact{Label: fmt.Sprintf("fact%d", i), Text: "v"})
	}
	var huge []chat.Line
	for i := range 400 {
		huge = append(huge, chat.Line{Text: fmt.Sprintf("line %03d %s", i, strings.Repeat("x", 40))})
	}
	m.Sections = append(m.Sections, chat.Section{Heading: "Huge stdout", Lines: huge, Code: strings.Repeat("diff line\n", 1000)})
	m.Sections = append(m.Sections, chat.Section{Heading: "One enormous line", Text: strings.Repeat("y", 5000)})
	for i := range 60 {
		m.Sections = append(m.Sections, chat.Section{Heading: fmt.Sprintf("finding %d", i)})
	}
	m.Buttons = []chat.Button{{ID: runview.ActionApprove, Label: "Approve", Value: "p-1|abc"}}
	m.Notes = []string{"small print"}
	blocks := golden(t, "truncated", m)
	raw := marshalBlocks(t, blocks)
	require.Contains(t, string(raw), "Full output: `runbot show r-20260618-204412-3f9a1c`")
	_, isActions := blocks[len(blocks)-2].(*slack.ActionBlock)
	require.True(t, isActions, "the buttons survive truncation")
}

func TestGoldenDryRun(t *testing.T) {
	t.Parallel()
	rs := wedgeState(t)
	m := chat.Message{Title: "Dry run: disable_overlap_and_restart on dsv4", Status: chat.StatusInfo, Sections: runview.PlanSections(&rs.prop.Body),
		Notes: []string{"Nothing was changed. Plan " + rs.plan.ID + ", hash " + runview.ShortHash(rs.plan.Hash) + "."}}
	golden(t, "dry-run", m)
}

// BenchmarkRenderRunMessage renders the incident's full run message (view
// and Block Kit), which happens on every coalesced update.
func BenchmarkRenderRunMessage(b *testing.B) {
	rs := wedgeState(b)
	r, err := NewRedactor(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m := rs.view.Message()
		_ = renderBlocks(m.Map(r.Redact))
	}
}
