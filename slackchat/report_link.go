package slackchat

import (
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
)

// reportLinkLabel is how a message names the link to its run's report.
const reportLinkLabel = "Full report"

// prepare makes a message ready to render: every text redacted, and, for
// a message about a run, the link to the run's report added after the
// redaction (runbot made the link; a signature is not command output).
func (m *messenger) prepare(msg chat.Message) chat.Message {
	msg = msg.Map(m.redact.Redact)
	if msg.Run != "" && m.reportURL != nil {
		if u := m.reportURL(msg.Run); u != "" {
			msg.Links = append(append([]chat.Link(nil), msg.Links...), chat.Link{Label: reportLinkLabel, URL: u})
		}
	}
	return msg
}

// linksBlock shows links as Slack links in a context block; nil when there
// is none to show. A URL that would break out of Slack's <url|label>
// syntax is left out rather than mangled.
func linksBlock(links []chat.Link) slack.Block {
	var els []slack.MixedElement
	for _, l := range links {
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || strings.ContainsAny(l.URL, "<>| \n") {
			continue
		}
		label := strings.NewReplacer("|", "/", "\n", " ").Replace(l.Label)
		els = append(els, mrkdwn(cut(":page_facing_up: <"+strings.ReplaceAll(l.URL, "&", "&amp;")+"|"+esc(label)+">", maxSectionText)))
	}
	if len(els) == 0 {
		return nil
	}
	return slack.NewContextBlock("", limitElements(els)...)
}
