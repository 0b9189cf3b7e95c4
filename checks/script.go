package checks

import (
	"strings"
)

// scriptLine is one logical line of a shell script or unit file: physical
// lines joined where they end in a backslash, with comments removed.
type scriptLine struct {
	File string
	// Line is the physical line the logical line starts on, from 1.
	Line int
	Text string
	// starts holds the offset in Text at which each physical line after
	// the first begins, so a match can be reported on its own line.
	starts []int
}

// lineAt returns the physical line number of offset off in Text.
func (l scriptLine) lineAt(off int) int {
	n := l.Line
	for _, s := range l.starts {
		if off >= s {
			n++
		}
	}
	return n
}

// logicalLines splits a shell script into logical lines. A line ending in
// an odd number of backslashes continues on the next one, as in the shell;
// comments (a # that starts a word outside quotes) are removed and end the
// logical line, so that a commented-out flag never counts. Lines left empty
// are dropped. Quotes spanning physical lines are not followed.
func logicalLines(file, text string) []scriptLine {
	return joinContinued(file, text, 1, stripShellComment)
}

// unitFileLines splits `systemctl cat` output into the logical lines of
// each unit file and drop-in it shows. systemctl marks the start of each
// file with a "# /path/to/file" line; lines starting with # or ; are
// comments in unit files.
func unitFileLines(out string) []scriptLine {
	var lines []scriptLine
	file, start := "", 0
	var body []string
	flush := func() {
		if len(body) > 0 {
			lines = append(lines, joinContinued(file, strings.Join(body, "\n"), start, stripUnitComment)...)
		}
		body = nil
	}
	for l := range strings.SplitSeq(out, "\n") {
		if path, ok := strings.CutPrefix(l, "# /"); ok && !strings.ContainsAny(path, " \t") {
			flush()
			// Lines are numbered within each file, as an editor shows them.
			file, start = "/"+path, 1
			continue
		}
		body = append(body, l)
	}
	flush()
	return lines
}

// joinContinued joins continued physical lines and applies strip to each
// logical line. first is the number of text's first line.
func joinContinued(file, text string, first int, strip func(string) string) []scriptLine {
	var out []scriptLine
	var cur strings.Builder
	var starts []int
	start := 0
	emit := func() {
		stripped := strip(cur.String())
		s := strings.TrimSpace(stripped)
		if s != "" {
			lead := len(stripped) - len(strings.TrimLeft(stripped, " \t"))
			var adj []int
			for _, o := range starts {
				adj = append(adj, o-lead)
			}
			out = append(out, scriptLine{File: file, Line: start, Text: s, starts: adj})
		}
		cur.Reset()
		starts = nil
	}
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimRight(l, "\r")
		if cur.Len() == 0 && starts == nil {
			start = first + i
		} else {
			starts = append(starts, cur.Len())
		}
		if c := strip(l); c != l {
			// A comment runs to the end of its physical line, and a
			// backslash inside it continues nothing.
			cur.WriteString(c)
			emit()
			continue
		}
		if trailingBackslashes(l)%2 == 1 {
			cur.WriteString(l[:len(l)-1])
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		emit()
	}
	if cur.Len() > 0 {
		emit()
	}
	return out
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// stripShellComment removes a shell comment: a # at the start of a word,
// outside single and double quotes and not escaped.
func stripShellComment(s string) string {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			i++ // the next character is literal, inside double quotes too
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == ';' || s[i-1] == '&' || s[i-1] == '|'):
			return s[:i]
		}
	}
	return s
}

// stripUnitComment removes a unit-file comment, which only a whole line can
// be.
func stripUnitComment(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
		return ""
	}
	return s
}

// shellWords splits a line into words the way the shell would, removing
// quotes and backslash escapes. It does not expand anything: $VAR stays as
// written.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// findFlag looks for flag among words, as "--flag", "--flag=value" or
// "--flag value". value is empty for a flag given alone or followed by
// another option.
func findFlag(words []string, flag string) (value string, found bool) {
	for i, w := range words {
		if w == flag {
			if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !isShellOperator(words[i+1]) {
				return words[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(w, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

func isShellOperator(w string) bool {
	switch w {
	case "&", "&&", "|", "||", ";", ">", ">>", "<", "2>&1":
		return true
	}
	return false
}
