package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

func numbered(n int, format string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

func TestTrimText(t *testing.T) {
	t.Parallel()
	r, err := redact.New(nil)
	require.NoError(t, err)
	// A private key that a cut by lines would split, its start left out
	// and its end kept: redacted whole first, no line of it is shown.
	key := numbered(1500, "line %d\n") + "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("KEYMATERIAL\n", 1200) + "-----END RSA PRIVATE KEY-----\n" + numbered(10, "after %d\n")
	cases := []struct {
		name, in string
		// want is the whole result, or "" to check only what it holds.
		want            string
		holds, holdsNot []string
	}{
		{name: "short", in: "a\nb\n", want: "a\nb\n"},
		{name: "2000 lines", in: numbered(2000, "%d\n"), want: numbered(2000, "%d\n")},
		{name: "2000 lines, the last unended", in: strings.TrimSuffix(numbered(2000, "%d\n"), "\n"), want: strings.TrimSuffix(numbered(2000, "%d\n"), "\n")},
		{name: "2001 lines", in: numbered(2001, "%d\n"),
			want: numbered(1000, "%d\n") + "[… 1 lines (5 bytes) left out here …]\n" + strings.TrimPrefix(numbered(2001, "%d\n"), numbered(1001, "%d\n"))},
		{name: "one long line", in: strings.Repeat("x", 1200<<10) + "é",
			holds: []string{strings.Repeat("x", 256<<10) + "\n[… ", " bytes left out here …]\n"}, holdsNot: []string{strings.Repeat("x", 600<<10)}},
		{name: "a key across the cut", in: key,
			holds: []string{"line 0\n", "[redacted]", "after 9\n"}, holdsNot: []string{"KEYMATERIAL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := trimText(tc.in, r)
			if tc.want != "" {
				require.Equal(t, tc.want, got)
			}
			for _, h := range tc.holds {
				require.Contains(t, got, h)
			}
			for _, h := range tc.holdsNot {
				require.NotContains(t, got, h)
			}
			require.Equal(t, strings.ToValidUTF8(got, "?"), got, "cut on a rune's start")
		})
	}
}

func TestShrinkReport(t *testing.T) {
	t.Parallel()
	r, err := redact.New(nil)
	require.NoError(t, err)
	lines := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("line %d password=hunter%d", i, i)
		}
		return out
	}
	events := make([]step.Event, 2500)
	for i := range events {
		events[i] = step.Event{Kind: step.EventProgress, Text: fmt.Sprintf("event %d", i)}
	}
	numbers := make([]any, 3000)
	for i := range numbers {
		numbers[i] = i
	}
	rep := &runbooks.Report{RunID: "r-1", Runbook: "rb", Params: map[string]string{"a": "b"},
		Findings:     []runbooks.FindingResult{{ID: "small", Evidence: lines(3)}, {ID: "big", Evidence: lines(5000)}},
		Inconclusive: []runbooks.FindingResult{{ID: "undecided", Reason: "no data", Evidence: lines(4000)}},
		Steps: []*runbooks.TargetRun{
			{Step: "s0", Evidence: lines(10), Values: map[string]any{"n": 1}},
			{Step: "s1", Evidence: lines(2001), Events: events,
				Values: map[string]any{"stdout": strings.Join(lines(2500), "\n"), "nums": numbers, "nested": map[string]any{"list": numbers[:2001]}}},
		},
	}
	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	out, c, err := shrinkReport(raw, r)
	require.NoError(t, err)
	var got runbooks.Report
	require.NoError(t, json.Unmarshal(out, &got))

	require.Equal(t, map[int]cut{1: {At: 1000, Omitted: 3000}}, c.findings)
	require.Equal(t, map[int]cut{1: {At: 1000, Omitted: 1}}, c.evidence)
	require.Equal(t, map[int]cut{1: {At: 1000, Omitted: 500}}, c.events)
	require.Equal(t, rep.Findings[0], got.Findings[0], "a short list is whole")
	require.Equal(t, rep.Steps[0].Evidence, got.Steps[0].Evidence)
	big := got.Findings[1].Evidence
	require.Len(t, big, 2000)
	require.Equal(t, rep.Findings[1].Evidence[999], big[999])
	require.Equal(t, rep.Findings[1].Evidence[4000], big[1000])
	require.Len(t, got.Inconclusive[0].Evidence, 2000)
	require.Len(t, got.Steps[1].Events, 2000)
	require.Equal(t, "event 2499", got.Steps[1].Events[1999].Text)

	values := got.Steps[1].Values.(map[string]any)
	nums := values["nums"].([]any)
	require.Len(t, nums, 2001)
	require.Equal(t, "[… 1000 items left out here …]", nums[1000])
	require.InDelta(t, 2000, nums[1001], 0)
	nested := values["nested"].(map[string]any)["list"].([]any)
	require.Len(t, nested, 2001)
	require.Equal(t, "[… 1 items left out here …]", nested[1000], "arrays at any depth of the values are cut")
	stdout := values["stdout"].(string)
	require.Contains(t, stdout, "[… 500 lines (")
	require.NotContains(t, stdout, "hunter", "a cut text is redacted whole before it is cut")
	require.Equal(t, rep.Params, got.Params)

	// Indented JSON (as a Postgres jsonb column gives it back) is cut the
	// same.
	indented, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	out2, c2, err := shrinkReport(indented, r)
	require.NoError(t, err)
	require.Equal(t, c, c2)
	var got2 runbooks.Report
	require.NoError(t, json.Unmarshal(out2, &got2))
	require.Equal(t, got, got2)

	// A report with nothing to cut is kept as it is, uncopied.
	small, err := json.Marshal(&runbooks.Report{RunID: "r-2", Findings: []runbooks.FindingResult{{ID: "f", Evidence: lines(5)}}})
	require.NoError(t, err)
	kept, kc, err := shrinkReport(small, r)
	require.NoError(t, err)
	require.Same(t, &small[0], &kept[0])
	require.Empty(t, kc.findings)

	for _, bad := range []string{``, `{`, `{"a":}`, `{"a":"b"`, `[1,2`, `{"a":1} x`, `{"a" 1}`} {
		_, _, err := shrinkReport([]byte(bad), r)
		require.Error(t, err, "%q", bad)
	}
}
