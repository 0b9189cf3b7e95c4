// Package shellscript reads the shell scripts runbot inspects and edits
// (launch scripts, env files): their physical lines split into words with
// byte offsets, logical lines (continued lines joined, comments dropped),
// simple commands, the flags a command passes and the variables a script
// exports. The flag check reads scripts with it and config_edit edits them
// with it, so what one writes is what the other reads. It reads; it never
// expands anything: $VAR stays as written.
package shellscript

import "strings"

// Word is one shell word (or operator) of a physical line, with its byte
// offsets in that line so an edit can replace exactly its text.
type Word struct {
	Start, End int
	// Raw is the word as written: line[Start:End].
	Raw string
	// Val is the word after quote removal; parameter expansions and command
	// substitutions are kept as written.
	Val string
	// Op marks an operator (|, &&, ;, >, 2>&1, ...) or a redirection's
	// target: text that is not an argument of the command.
	Op bool
	// Control marks an operator that ends the simple command (|, ||, &&,
	// ;, &, parentheses).
	Control bool
}

// Line is one physical line of a script, split into words.
type Line struct {
	Words []Word
	// Cont says the line ends with a backslash that joins it to the next.
	Cont bool
	// Comment says a comment ends the line: a # that starts a word outside
	// quotes. A comment continues nothing, whatever it ends with.
	Comment bool
	// Code is the offset where the line's shell text ends: the comment's #,
	// the continuation backslash, or the end of the line (before a
	// trailing carriage return).
	Code int
}

const opChars = "|&;<>()"

// ScanLine splits one physical line into words the way a POSIX shell
// would, closely enough to find and edit flags: quotes, backslash escapes,
// comments, operators and a trailing line-continuation backslash. A quote
// left open at the end of the line ends the word there; scripts that
// continue a quoted string onto the next line are beyond what runbot reads.
// A carriage return ending the line (a script saved with CRLF) is not part
// of it.
func ScanLine(s string) Line {
	s = strings.TrimSuffix(s, "\r")
	out := Line{Code: len(s)}
	redirectTarget := false
	add := func(w Word) {
		w.Raw = s[w.Start:w.End]
		out.Words = append(out.Words, w)
	}
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#':
			out.Comment, out.Code = true, i
			return out
		case c == '\\' && i == len(s)-1:
			out.Cont, out.Code = true, i
			return out
		}
		if j := operatorEnd(s, i); j > i {
			text := s[i:j]
			redirect := strings.ContainsAny(text, "<>")
			add(Word{Start: i, End: j, Val: text, Op: true, Control: !redirect})
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
					out.Cont, out.Code = true, i
					add(Word{Start: start, End: i, Val: b.String(), Op: redirectTarget})
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
		add(Word{Start: start, End: i, Val: b.String(), Op: redirectTarget})
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
