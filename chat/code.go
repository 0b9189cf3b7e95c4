package chat

import "strings"

// CodeOpen and CodeClose delimit a span that Code made: runes of Unicode's
// private use area, which no text runbot shows otherwise holds.
const (
	CodeOpen  = '\uE000'
	CodeClose = '\uE001'
)

// Code marks s as code inside a message's text: a command to type, a run
// id. Every other text of a Message is plain and shown as it is; a
// platform shows a code span as code (Slack: an inline code span), and
// the terminal rendering (Message.Text) between backticks. It is for
// runbot's own texts ("/runbot status r-1 shows its result"): data keeps
// its backticks as characters.
func Code(s string) string { return string(CodeOpen) + s + string(CodeClose) }

// codeMarks turns code spans into backticks for plain text.
var codeMarks = strings.NewReplacer(string(CodeOpen), "`", string(CodeClose), "`")
