package slackchat

import (
	"regexp"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// A value from a person or an alert (a run's params, who asked, an
// alert's labels) shows in Slack as itself: Slack's formatting markers in
// it format nothing, and its mentions and links ping and link no one.
// Each case renders the run message of a CLI run whose requester and
// "note" param are the value, with an alert's labels and an evidence line
// holding it too, against a golden.
func TestGoldenUserValuesShowLiterally(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value string
		// shows is the value in mrkdwn text; inCode is the value in a
		// code span (the params fact), where Slack formats nothing.
		shows, inCode string
	}{
		{"bold", "*bold*", "∗bold∗", "*bold*"},
		{"italic", "_x_", "ˍxˍ", "_x_"},
		{"strike", "~x~", "∼x∼", "~x~"},
		{"code", "`x`", "ˋxˋ", "ˋxˋ"},
		{"channel", "<!channel>", "&lt;!channel&gt;", "&lt;!channel&gt;"},
		{"user", "<@U123>", "&lt;@U123&gt;", "&lt;@U123&gt;"},
		{"link", "<http://evil.example|x>", "&lt;http://evil.example|x&gt;", "&lt;http://evil.example|x&gt;"},
		{"mixed", "_a_ *b* ~c~ `d` <!here>", "ˍaˍ ∗b∗ ∼c∼ ˋdˋ &lt;!here&gt;", "_a_ *b* ~c~ ˋdˋ &lt;!here&gt;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := store.Run{ID: "r-20260618-204412-3f9a1c", Runbook: "stuck-worker", Trigger: store.TriggerCLI, RequestedBy: tc.value,
				Params: map[string]string{"deployment": "dsv4", "note": tc.value}, Status: store.RunRunning}
			v := runview.New(run, nil)
			v.Title = "stuck-worker on dsv4 " + tc.value
			m := v.Message()
			m.Facts = append(m.Facts, chat.Fact{Label: "Alert", Text: tc.value})
			m.Sections = append(m.Sections, chat.Section{Heading: "Alert " + tc.value,
				Lines: []chat.Line{{Text: "severity=page summary=" + tc.value}}, Text: tc.value + "\n> " + tc.value})
			m.Notes = append(m.Notes, "note: "+tc.value)
			blocks := golden(t, "user-value-"+tc.name, m)

			texts := mrkdwnTexts(blocks)
			texts = append(texts, fallbackText(m))
			all := strings.Join(texts, "\n")
			require.Contains(t, all, "*Trigger:* cli "+tc.shows, "who asked, as text")
			require.Contains(t, all, "*Params:* `deployment=dsv4 note="+tc.inCode+"`", "params, in a code span")
			require.Contains(t, all, "• severity=page summary="+tc.shows, "an evidence line")
			require.Contains(t, all, "\n\u00ad&gt; "+tc.shows, "a line starting with > is not a quote")
			for _, text := range texts {
				// Outside runbot's own code spans, the value's markers
				// and markup are gone.
				rest := codeSpan.ReplaceAllString(text, "")
				for _, live := range []string{"*bold*", "_x_", "~x~", "`x`", "_a_", "*b*", "~c~", "`d`", "<!", "<@U123>", "<http://evil"} {
					require.NotContains(t, rest, live, "in %q", text)
				}
			}
		})
	}
}

// codeSpan is an inline code span of rendered mrkdwn.
var codeSpan = regexp.MustCompile("`[^`\n]*`")

// mrkdwnTexts are the mrkdwn texts of rendered blocks.
func mrkdwnTexts(blocks []slack.Block) []string {
	var out []string
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			out = append(out, b.Text.Text)
		case *slack.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if tb, ok := e.(*slack.TextBlockObject); ok && tb.Type == slack.MarkdownType {
					out = append(out, tb.Text)
				}
			}
		}
	}
	return out
}

// esc leaves markers inside words, where Slack formats nothing, as they
// are, and changes those at a word's edge.
func TestEscMarkers(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"probe_timeout=8s", "probe_timeout=8s"},
		{":white_check_mark: done", ":white_check_mark: done"},
		{"2*3*4", "2*3*4"},
		{"a~b", "a~b"},
		{"__init__", "ˍˍinitˍˍ"},
		{"/var/log/*.log", "/var/log/∗.log"},
		{"~/.ssh", "∼/.ssh"},
		{"x_", "xˍ"},
		{"a`b", "aˋb"},
		{"1 > 0 & 2 < 3", "1 &gt; 0 &amp; 2 &lt; 3"},
		{"> quoted\n>> again", "\u00ad&gt; quoted\n\u00ad&gt;&gt; again"},
		{"héllo_wörld *ünïcode*", "héllo_wörld ∗ünïcode∗"},
		{"bad \xff_utf8", "bad \xffˍutf8"},
		{"", ""},
		// runbot's own code spans (chat.Code) show as code; a span's
		// text is only entity-escaped, and a stray mark shows nothing.
		{chat.Code("/runbot status r-1") + " shows its result.", "`/runbot status r-1` shows its result."},
		{"run " + chat.Code("a_b *c* <x>") + " now", "run `a_b *c* &lt;x&gt;` now"},
		{"stray \ue001 close and *open " + string(chat.CodeOpen), "stray  close and ∗open "},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, esc(tc.in), "esc(%q)", tc.in)
	}
}
