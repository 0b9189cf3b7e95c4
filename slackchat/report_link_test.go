package slackchat

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/chat"
)

// With a report site, every message about a run links to the run's report
// page, the run message and its updates included; without one, none does.
func TestRunMessagesLinkToTheirReport(t *testing.T) {
	t.Parallel()
	var asked []string
	h := newHarness(t, func(c *Config) {
		c.ReportURL = func(runID string) string {
			asked = append(asked, runID)
			return "https://runbot.example.com/runs/" + runID + "?l=1781820252.c2lnbmF0dXJl"
		}
	})
	run, ts := h.runOnce("")
	text := h.lastMessage(ts).Text()
	require.Contains(t, text, "<https://runbot.example.com/runs/"+run.ID+"?l=1781820252.c2lnbmF0dXJl|Full report>")
	require.Contains(t, asked, run.ID)
	for _, c := range h.rec.Calls("chat.postMessage", "chat.update") {
		require.Contains(t, c.Text(), "|Full report>", "every version of the run message links to the report")
	}

	plain := newHarness(t)
	_, ts = plain.runOnce("")
	require.NotContains(t, plain.lastMessage(ts).Text(), "Full report")
}

// A link is shown only when it cannot break Slack's <url|label> syntax.
func TestLinksBlock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		link chat.Link
		want string
	}{
		{chat.Link{Label: "Full report", URL: "https://x.example/runs/r-1?l=1.s"}, ":page_facing_up: <https://x.example/runs/r-1?l=1.s|Full report>"},
		{chat.Link{Label: "a|b <c>", URL: "https://x.example/?a=1&b=2"}, ":page_facing_up: <https://x.example/?a=1&amp;b=2|a/b &lt;c&gt;>"},
		{chat.Link{Label: "x", URL: "https://x.example/a|b"}, ""},
		{chat.Link{Label: "x", URL: "javascript:alert(1)"}, ""},
		{chat.Link{Label: "x", URL: "https://x.example/<@U1>"}, ""},
	}
	for _, tc := range cases {
		b := linksBlock([]chat.Link{tc.link})
		if tc.want == "" {
			require.Nil(t, b, tc.link.URL)
			continue
		}
		require.NotNil(t, b, tc.link.URL)
		var got []string
		for _, e := range b.(*slack.ContextBlock).ContextElements.Elements {
			got = append(got, e.(*slack.TextBlockObject).Text)
		}
		require.Equal(t, tc.want, strings.Join(got, ""))
	}
}
