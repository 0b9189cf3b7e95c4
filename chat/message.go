// Package chat is the seam between runbot and a chat platform. Going out:
// the platform-neutral Message runbot posts, the Chat interface a platform
// implements to post, update and thread messages, and Replier to answer
// one person privately. Coming in: the Command and Click a platform parses
// its payloads into, and the Handler it hands them to (package commands).
// Slack is the first platform, in package slackchat; chattest records for
// tests.
package chat

import "time"

// Message is what runbot posts, independent of Slack's Block Kit: a title
// with a status, a few facts, sections of text and evidence, and buttons.
// Every text is plain text, untrusted data included; a platform escapes it
// when it renders (Slack's blockkit.go), so command output can never become a mention, a link or
// formatting. People are referred to by user ID (Users) and rendered as
// mentions.
type Message struct {
	Title  string
	Status Status
	// Facts are short labelled values under the title (run id, who asked,
	// params).
	Facts    []Fact
	Sections []Section
	Buttons  []Button
	// Notes are small print at the end.
	Notes []string
	// More says where the full content is when the message had to be
	// shortened to fit Slack's limits, e.g. "runbot show r-…".
	More string
	// Run is the id of the run the message is about, if it is about one:
	// a platform that knows where run reports are published links to the
	// run's report (slackchat.Config.ReportURL).
	Run string
	// Links are web pages to open, shown after the rest ("Full report").
	// They are made by runbot, not from data, so Map leaves them alone.
	Links []Link
}

// Link is a labelled web address.
type Link struct {
	Label string
	URL   string
}

// Fact is one labelled value; User, when set, is a Slack user ID shown as a
// mention after Text.
type Fact struct {
	Label string
	Text  string
	User  string
	// Code shows Text in monospace.
	Code bool
}

// Section is a heading with text, lines (evidence, steps) and an optional
// preformatted block (a diff).
type Section struct {
	Heading string
	Status  Status
	Text    string
	Lines   []Line
	Code    string
}

// Line is one line of a section: an optional status icon, text, and people
// mentioned after it.
type Line struct {
	Status Status
	Text   string
	Users  []string
	// Code shows Text in monospace.
	Code bool
}

// ButtonStyle colours a button.
type ButtonStyle string

const (
	StylePrimary ButtonStyle = "primary"
	StyleDanger  ButtonStyle = "danger"
)

// Button is an interactive button; ID is its action id and Value what its
// click carries back.
type Button struct {
	ID    string
	Label string
	Value string
	Style ButtonStyle
	// Confirm, when set, asks "are you sure" with this text first.
	Confirm string
}

// Status is the state a message, section or line shows as an icon.
type Status string

const (
	StatusNone         Status = ""
	StatusRunning      Status = "running"
	StatusOK           Status = "ok"
	StatusInfo         Status = "info"
	StatusWarning      Status = "warning"
	StatusCritical     Status = "critical"
	StatusInconclusive Status = "inconclusive"
	StatusError        Status = "error"
	StatusWaiting      Status = "waiting"
	StatusPending      Status = "pending"
	StatusApproved     Status = "approved"
	StatusDenied       Status = "denied"
	StatusSkipped      Status = "skipped"
)

// Map returns a copy of m with every text passed through f (a redactor):
// title, facts, sections, lines and notes.
func (m Message) Map(f func(string) string) Message {
	out := m
	out.Title = f(m.Title)
	out.Facts = make([]Fact, len(m.Facts))
	for i, fa := range m.Facts {
		fa.Text = f(fa.Text)
		out.Facts[i] = fa
	}
	out.Sections = make([]Section, len(m.Sections))
	for i, s := range m.Sections {
		s.Heading, s.Text, s.Code = f(s.Heading), f(s.Text), f(s.Code)
		lines := make([]Line, len(s.Lines))
		for j, l := range s.Lines {
			l.Text = f(l.Text)
			lines[j] = l
		}
		s.Lines = lines
		out.Sections[i] = s
	}
	out.Notes = make([]string, len(m.Notes))
	for i, n := range m.Notes {
		out.Notes[i] = f(n)
	}
	return out
}

// Stamp is how a message shows a point in time.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
