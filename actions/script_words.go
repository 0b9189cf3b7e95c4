package actions

import (
	"strings"

	"github.com/runbot/runbot/internal/shell"
)

// word is one shell word (or operator) of a physical line of a script, with
// its byte offsets so an edit can replace exactly its text and nothing else.
type word struct {
	start, end int
	// val is the word after quote removal; parameter expansions and command
	// substitutions are kept as written.
	val string
	// op marks an operator (|, &&, ;, >, 2>&1, ...) or a redirection's
	// target: text that is not an argument of the command.
	op bool
	// control marks an operator that ends the simple command (|, ||, &&, ;, &).
	control bool
}

// scriptLine is one physical line of a script, split into words.
type scriptLine struct {
	words []word
	// cont says the line ends with a backslash that joins it to the next.
	cont bool
}

const opChars = "|&;<>()"

// scanLine splits one physical line into words the way a POSIX shell would,
// closely enough to find and edit flags: quotes, backslash escapes, comments,
// operators and a trailing line-continuation backslash. A quote left open at
// the end of the line ends the word there; scripts that continue a quoted
// string onto the next line are beyond what runbot edits.
func scanLine(s string) scriptLine {
	var out scriptLine
	redirectTarget := false
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#':
			return out
		case c == '\\' && i == len(s)-1:
			out.cont = true
			return out
		}
		if j := operatorEnd(s, i); j > i {
			text := s[i:j]
			redirect := strings.ContainsAny(text, "<>")
			out.words = append(out.words, word{start: i, end: j, val: text, op: true, control: !redirect})
			// ">&2" and "2>&1" carry their target; "> file" does not.
			carriesTarget := strings.Contains(text, "&") && (isDigit(s[j-1]) || s[j-1] == '-')
			redirectTarget = redirect && !carriesTarget
			i = j
			continue
		}
		start := i
		var b strings.Builder
	scan:
		for i < len(s) {
			c := s[i]
			switch {
			case c == ' ' || c == '\t' || c == '\r' || strings.IndexByte(opChars, c) >= 0:
				break scan
			case c == '\\':
				if i == len(s)-1 {
					out.cont = true
					out.words = append(out.words, word{start: start, end: i, val: b.String(), op: redirectTarget})
					return out
				}
				b.WriteByte(s[i+1])
				i += 2
			case c == '\'':
				j := strings.IndexByte(s[i+1:], '\'')
				if j < 0 {
					b.WriteString(s[i+1:])
					i = len(s)
					break scan
				}
				b.WriteString(s[i+1 : i+1+j])
				i += j + 2
			case c == '"':
				i = scanDoubleQuoted(s, i+1, &b)
			case c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
				j := matchingClose(s, i+1)
				b.WriteString(s[i:j])
				i = j
			default:
				b.WriteByte(c)
				i++
			}
		}
		out.words = append(out.words, word{start: start, end: i, val: b.String(), op: redirectTarget})
		redirectTarget = false
	}
	return out
}

// operatorEnd returns the end of the operator that starts at i (an optional
// file descriptor number, the operator characters, and the descriptor of a
// ">&N" duplication), or i when no operator starts there.
func operatorEnd(s string, i int) int {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == len(s) || strings.IndexByte(opChars, s[j]) < 0 {
		return i
	}
	if j > i && s[j] != '<' && s[j] != '>' {
		return i // "2&" is a word followed by '&', not a descriptor
	}
	for j < len(s) && strings.IndexByte(opChars, s[j]) >= 0 {
		j++
	}
	if s[j-1] == '&' && j-2 >= i && (s[j-2] == '>' || s[j-2] == '<') {
		for j < len(s) && (isDigit(s[j]) || s[j] == '-') {
			j++
		}
	}
	return j
}

// scanDoubleQuoted appends the content of a double-quoted string starting
// after its opening quote and returns the index after the closing quote.
func scanDoubleQuoted(s string, i int, b *strings.Builder) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == '"':
			return i + 1
		case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0:
			b.WriteByte(s[i+1])
			i += 2
		case c == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
			j := matchingClose(s, i+1)
			b.WriteString(s[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return i
}

// matchingClose returns the index after the bracket that closes the one at
// i, or the end of the line when it is not closed there.
func matchingClose(s string, i int) int {
	open := s[i]
	closer := byte(')')
	if open == '{' {
		closer = '}'
	}
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case open:
			depth++
		case closer:
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// quoteLike quotes val for the shell the way old (a word's text as written)
// was quoted, so that replacing a value keeps the script's style: a value
// that was in double quotes stays in double quotes.
func quoteLike(old, val string) string {
	switch {
	case strings.HasPrefix(old, `"`):
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
		return `"` + r.Replace(val) + `"`
	case strings.HasPrefix(old, `'`):
		return "'" + strings.ReplaceAll(val, "'", `'\''`) + "'"
	}
	return shell.Quote(val)
}
