package slackchat

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
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
	return " Full output: " + code(more)
}

func factsBlock(facts []chat.Fact) slack.Block {
	var els []slack.MixedElement
	for _, f := range facts {
		text := esc(f.Text)
		if f.Code && f.Text != "" {
			text = code(f.Text)
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
		// A fence shows its text as it is, but for the entities and a
		// fence in the text, which would end it.
		block := strings.ReplaceAll(escEntities(strings.TrimRight(s.Code, "\n")), "```", "`\u200b`\u200b`")
		for _, chunk := range chunkCode(strings.Split(block, "\n"), maxBlocksPerCode, more) {
			out = append(out, textSection(chunk))
		}
	}
	return out
}

func renderLine(l chat.Line) string {
	text := esc(l.Text)
	if l.Code && l.Text != "" {
		text = code(l.Text)
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

// esc makes untrusted text (command output, params, who asked, alert
// labels) show in mrkdwn as itself. Slack gives meaning to &, < and >
// (mentions, channel pings, links): they become the entities Slack's
// formatting reference asks for. Slack also formats *bold*, _italic_,
// ~strike~ and `code`, and quotes a line that starts with >, and has no
// escape for those. It formats a marker only at the edge of a word
// ("Super_cali_fragilistic" shows as it is), so a marker between two
// letters or digits (probe_timeout, the underscores of an emoji code) is
// left alone; any other becomes a look-alike, those jsx-slack's Escape
// uses: ∗ (U+2217), ˍ (U+02CD), ∼ (U+223C), ˋ (U+02CB). A backtick is
// always replaced, as a code span needs no word edge. A look-alike reads
// as the marker to the on-call engineer; text they copy holds a visible
// difference, where an inserted zero-width joiner would be an invisible
// one. A line's leading > gets a soft hyphen (U+00AD) before it, which
// shows nothing and keeps Slack from quoting the line. runbot's own
// formatting (bold labels and headings, code spans, notes in italics) is
// added around the escaped text, never passed through esc; within a
// text, a span runbot marked with chat.Code becomes a code span.
func esc(s string) string {
	if strings.ContainsRune(s, chat.CodeOpen) {
		return escSpans(s)
	}
	if !strings.ContainsAny(s, mrkdwnSpecial) && !strings.ContainsRune(s, chat.CodeClose) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	prev := rune(-1) // the rune before r; -1 at the start
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		next := rune(-1)
		if i+w < len(s) {
			next, _ = utf8.DecodeRuneInString(s[i+w:])
		}
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			if prev == -1 || prev == '\n' {
				b.WriteString("\u00ad")
			}
			b.WriteString("&gt;")
		case '`':
			b.WriteRune('ˋ')
		case chat.CodeOpen, chat.CodeClose:
			// A stray mark (a half span, or one in data) shows nothing.
		case '*', '_', '~':
			if wordRune(prev) && wordRune(next) {
				b.WriteRune(r)
			} else {
				b.WriteRune(lookAlike[r])
			}
		default:
			// Bytes as they are, invalid UTF-8 included.
			b.WriteString(s[i : i+w])
		}
		prev = r
		i += w
	}
	return b.String()
}

// escSpans escapes s as esc does, but for the spans chat.Code marked,
// which become code spans.
func escSpans(s string) string {
	var b strings.Builder
	for s != "" {
		open := strings.IndexRune(s, chat.CodeOpen)
		if open < 0 {
			b.WriteString(esc(s))
			break
		}
		b.WriteString(esc(s[:open]))
		s = s[open+utf8.RuneLen(chat.CodeOpen):]
		end, next := strings.IndexRune(s, chat.CodeClose), len(s)
		if end < 0 {
			end = len(s)
		} else {
			next = end + utf8.RuneLen(chat.CodeClose)
		}
		if span := s[:end]; span != "" {
			b.WriteString(code(span))
		}
		s = s[next:]
	}
	return b.String()
}

// mrkdwnSpecial are the characters esc may change.
const mrkdwnSpecial = "&<>`*_~"

// lookAlike are the look-alikes esc puts for the markers of bold, italic
// and strikethrough.
var lookAlike = map[rune]rune{'*': '∗', '_': 'ˍ', '~': '∼'}

// wordRune reports whether r is a letter or a digit: a marker between two
// of them is inside a word, where Slack does not format.
func wordRune(r rune) bool {
	return r >= 0 && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// escEntities escapes only Slack's three control characters, for text
// in a code span or block, where Slack formats nothing else.
func escEntities(s string) string {
	return entities.Replace(s)
}

var entities = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// code shows untrusted text as an inline code span, in which Slack
// formats nothing: the text shows exactly, but for a backtick, which
// would end the span and becomes its look-alike ˋ (U+02CB).
func code(s string) string {
	s = strings.NewReplacer(string(chat.CodeOpen), "", string(chat.CodeClose), "").Replace(s)
	return "`" + strings.ReplaceAll(escEntities(s), "`", "ˋ") + "`"
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
