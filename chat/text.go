package chat

import (
	"strings"
)

// textIcons are the terminal counterparts of a platform's status icons.
var textIcons = map[Status]string{
	StatusRunning: "…", StatusOK: "✔", StatusInfo: "ℹ", StatusWarning: "⚠", StatusCritical: "✖",
	StatusInconclusive: "?", StatusError: "✖", StatusWaiting: "⏳", StatusPending: "⏳",
	StatusApproved: "✔", StatusDenied: "✖", StatusSkipped: "–",
}

// Text renders the message for a terminal: the same content, title,
// sections and buttons as a chat rendering, in plain text.
func (m Message) Text() string {
	var b strings.Builder
	icon := func(s Status) string {
		if i := textIcons[s]; i != "" {
			return i + " "
		}
		return ""
	}
	b.WriteString("┌ " + icon(m.Status) + m.Title + "\n")
	var facts []string
	for _, f := range m.Facts {
		t := f.Label + ": " + f.Text
		if f.User != "" {
			t += " @" + f.User
		}
		facts = append(facts, t)
	}
	if len(facts) > 0 {
		b.WriteString("│ " + strings.Join(facts, "  ·  ") + "\n")
	}
	for _, s := range m.Sections {
		b.WriteString("│\n│ " + icon(s.Status) + s.Heading + "\n")
		if s.Text != "" {
			for _, l := range strings.Split(s.Text, "\n") {
				b.WriteString("│   " + l + "\n")
			}
		}
		for _, l := range s.Lines {
			t := l.Text
			for _, u := range l.Users {
				t += " @" + u
			}
			b.WriteString("│   " + icon(l.Status) + t + "\n")
		}
		if s.Code != "" {
			for _, l := range strings.Split(strings.TrimRight(s.Code, "\n"), "\n") {
				b.WriteString("│     " + l + "\n")
			}
		}
	}
	if len(m.Buttons) > 0 {
		var bs []string
		for _, btn := range m.Buttons {
			bs = append(bs, "[ "+btn.Label+" ]")
		}
		b.WriteString("│\n│ " + strings.Join(bs, "  ") + "\n")
	}
	for _, n := range m.Notes {
		b.WriteString("│ " + n + "\n")
	}
	b.WriteString("└\n")
	return codeMarks.Replace(b.String())
}
