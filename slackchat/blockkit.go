package slackchat

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/chat"
)

// Slack's Block Kit limits (docs.slack.dev/reference/block-kit/blocks).
const (
	maxBlocks          = 50
	maxSectionText     = 3000
	maxHeaderText      = 150
	maxContextElements = 10
	maxButtonText      = 75
	maxButtonValue     = 2000
	// maxBlocksPerSection keeps one long section (a huge stdout) from
	// pushing everything after it out of the message.
	maxBlocksPerSection = 4
	maxBlocksPerCode    = 2
)

var statusEmoji = map[chat.Status]string{
	chat.StatusRunning:      ":hourglass_flowing_sand:",
	chat.StatusOK:           ":white_check_mark:",
	chat.StatusInfo:         ":information_source:",
	chat.StatusWarning:      ":warning:",
	chat.StatusCritical:     ":red_circle:",
	chat.StatusInconclusive: ":grey_question:",
	chat.StatusError:        ":x:",
	chat.StatusWaiting:      ":raised_hand:",
	chat.StatusPending:      ":white_circle:",
	chat.StatusApproved:     ":thumbsup:",
	chat.StatusDenied:       ":no_entry_sign:",
	chat.StatusSkipped:      ":fast_forward:",
}

// renderBlocks turns a message into Block Kit blocks within Slack's limits.
// It is the only place that knows Block Kit.
func renderBlocks(m chat.Message) []slack.Block {
	var head, body, tail []slack.Block
	title := m.Title
	if e := statusEmoji[m.Status]; e != "" {
		title = e + " " + title
	}
	head = append(head, slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cut(plain(title), maxHeaderText), true, false)))
	if len(m.Facts) > 0 {
		head = append(head, factsBlock(m.Facts))
	}
	more := moreNote(m.More)
	for _, s := range m.Sections {
		body = append(body, sectionBlocks(s, more)...)
	}
	if len(m.Buttons) > 0 {
		tail = append(tail, buttonsBlock(m.Buttons))
	}
	if b := linksBlock(m.Links); b != nil {
		tail = append(tail, b)
	}
	if len(m.Notes) > 0 {
		var els []slack.MixedElement
		for _, n := range m.Notes {
			els = append(els, mrkdwn(cut(esc(n), maxSectionText)))
		}
		tail = append(tail, slack.NewContextBlock("", limitElements(els)...))
	}
	if room := maxBlocks - len(head) - len(tail); len(body) > room {
		dropped := len(body) - (room - 1)
		body = append(body[:room-1], slack.NewContextBlock("", mrkdwn(fmt.Sprintf("_%d more blocks not shown.%s_", dropped, more))))
	}
	out := append(head, body...)
	return append(out, tail...)
}

// fallbackText is the message's plain text for notifications and clients
// that cannot show blocks.
func fallbackText(m chat.Message) string {
	t := m.Title
	if m.Status != chat.StatusNone {
		t += " (" + string(m.Status) + ")"
	}
	return esc(t)
}

func moreNote(more string) string {
	if more == "" {
		return ""
	}
	return " Full output: `" + strings.ReplaceAll(esc(more), "`", "'") + "`"
}

func factsBlock(facts []chat.Fact) slack.Block {
	var els []slack.MixedElement
	for _, f := range facts {
		text := esc(f.Text)
		if f.Code && f.Text != "" {
			text = "`" + strings.ReplaceAll(text, "`", "'") + "`"
		}
		if f.User != "" {
			text = strings.TrimSpace(text + " " + mention(f.User))
		}
		if f.Label != "" {
			text = "*" + esc(f.Label) + ":* " + text
		}
		els = append(els, mrkdwn(cut(text, maxSectionText)))
	}
	return slack.NewContextBlock("", limitElements(els)...)
}

// limitElements merges context elements past Slack's ten into the tenth.
func limitElements(els []slack.MixedElement) []slack.MixedElement {
	if len(els) <= maxContextElements {
		return els
	}
	var rest []string
	for _, e := range els[maxContextElements-1:] {
		rest = append(rest, e.(*slack.TextBlockObject).Text)
	}
	return append(els[:maxContextElements-1:maxContextElements-1], mrkdwn(cut(strings.Join(rest, " · "), maxSectionText)))
}

// sectionBlocks renders a section as one or more section blocks, each
// under Slack's 3000 characters, splitting between lines. What does not fit
// in the section's share of blocks is cut with a pointer to the full output.
func sectionBlocks(s chat.Section, more string) []slack.Block {
	var lines []string
	if s.Heading != "" {
		h := "*" + esc(s.Heading) + "*"
		if e := statusEmoji[s.Status]; e != "" {
			h = e + " " + h
		}
		lines = append(lines, h)
	}
	if s.Text != "" {
		lines = append(lines, strings.Split(esc(s.Text), "\n")...)
	}
	for _, l := range s.Lines {
		lines = append(lines, renderLine(l))
	}
	var out []slack.Block
	if len(lines) > 0 {
		for _, chunk := range chunkLines(lines, maxBlocksPerSection, more) {
			out = append(out, textSection(chunk))
		}
	}
	if s.Code != "" {
		code := strings.ReplaceAll(esc(strings.TrimRight(s.Code, "\n")), "```", "`\u200b`\u200b`")
		for _, chunk := range chunkCode(strings.Split(code, "\n"), maxBlocksPerCode, more) {
			out = append(out, textSection(chunk))
		}
	}
	return out
}

func renderLine(l chat.Line) string {
	text := esc(l.Text)
	if l.Code {
		text = "`" + strings.ReplaceAll(text, "`", "'") + "`"
	}
	var ms []string
	for _, u := range l.Users {
		ms = append(ms, mention(u))
	}
	if len(ms) > 0 {
		text = strings.TrimSpace(text + " " + strings.Join(ms, ", "))
	}
	if e := statusEmoji[l.Status]; e != "" {
		return e + " " + text
	}
	return "• " + text
}

// chunkLines packs lines into at most maxChunks texts of at most
// maxSectionText characters. A line longer than a whole block is cut; lines
// that do not fit in maxChunks are replaced by a note pointing to the full
// output.
func chunkLines(lines []string, maxChunks int, more string) []string {
	note := "_… truncated._" + more
	var chunks []string
	cur := ""
	for i, l := range lines {
		l = cut(l, maxSectionText-len(note)-1)
		next := joinLine(cur, l)
		last := len(chunks) == maxChunks-1
		room := maxSectionText
		if last && i < len(lines)-1 {
			// The last block keeps room for the note.
			room -= len(note) + 1
		}
		if len(next) <= room {
			cur = next
			continue
		}
		if last {
			return append(chunks, joinLine(cur, note))
		}
		chunks = append(chunks, cur)
		cur = l
	}
	if cur != "" {
		chunks = append(chunks, cur)
	}
	return chunks
}

func joinLine(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// chunkCode is chunkLines for a preformatted block: every chunk is fenced
// on its own, since Slack does not carry a fence across blocks.
func chunkCode(lines []string, maxChunks int, more string) []string {
	const fence = "```"
	note := "\n_… truncated._" + more
	budget := maxSectionText - 2*len(fence) - 2 - len(note)
	var chunks []string
	var cur strings.Builder
	flush := func(truncated bool) {
		c := fence + "\n" + cur.String() + "\n" + fence
		if truncated {
			c += note
		}
		chunks = append(chunks, c)
		cur.Reset()
	}
	for _, l := range lines {
		l = cut(l, budget)
		if cur.Len() > 0 && cur.Len()+1+len(l) > budget {
			if len(chunks) == maxChunks-1 {
				flush(true)
				return chunks
			}
			flush(false)
		}
		if cur.Len() > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(l)
	}
	if cur.Len() > 0 {
		flush(false)
	}
	return chunks
}

func textSection(text string) slack.Block {
	return slack.NewSectionBlock(mrkdwn(text), nil, nil)
}

func buttonsBlock(buttons []chat.Button) slack.Block {
	var els []slack.BlockElement
	for _, b := range buttons {
		btn := slack.NewButtonBlockElement(b.ID, cut(b.Value, maxButtonValue), slack.NewTextBlockObject(slack.PlainTextType, cut(b.Label, maxButtonText), false, false))
		if b.Style != "" {
			btn = btn.WithStyle(slack.Style(b.Style))
		}
		if b.Confirm != "" {
			btn = btn.WithConfirm(slack.NewConfirmationBlockObject(
				slack.NewTextBlockObject(slack.PlainTextType, "Are you sure?", false, false),
				slack.NewTextBlockObject(slack.MarkdownType, cut(esc(b.Confirm), 300), false, false),
				slack.NewTextBlockObject(slack.PlainTextType, cut(b.Label, 30), false, false),
				slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
			))
		}
		els = append(els, btn)
	}
	return slack.NewActionBlock("runbot_actions", els...)
}

func mrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, false)
}

// esc escapes the three characters Slack's mrkdwn gives meaning to, so
// that untrusted text cannot make a mention, a channel ping or a link.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// plain keeps angle brackets out of plain_text: whether Slack decodes
// entities there is not documented, so they become look-alikes instead of
// escapes, and "<!channel>" can never reach Slack in any form.
func plain(s string) string {
	return strings.NewReplacer("<", "‹", ">", "›").Replace(s)
}

var userIDRE = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// mention renders a Slack user ID as a mention; anything else (an
// "alertmanager" requester) as plain text.
func mention(user string) string {
	if userIDRE.MatchString(user) {
		return "<@" + user + ">"
	}
	return esc(user)
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}
