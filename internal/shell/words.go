package shell

import "strings"

// Words returns the arguments a command line written by Join stands for,
// and false for any other line: one with an operator, a variable, a glob,
// a redirection, double quotes or spacing Join does not write. A line it
// accepts means the same words to every POSIX shell, because it is made
// only of plain words and single-quoted text; it also refuses the two
// plain words some shells read otherwise: a first word with '=' (an
// assignment) and a word starting with '=' (zsh runs =cmd through PATH).
func Words(line string) ([]string, bool) {
	if line == "" {
		return nil, false
	}
	fields, ok := splitFields(line)
	if !ok {
		return nil, false
	}
	var words []string
	for _, field := range fields {
		w, ok := unquoteWord(field)
		if !ok || strings.HasPrefix(field, "=") || (words == nil && strings.Contains(field, "=")) {
			return nil, false
		}
		words = append(words, w)
	}
	// Join is the definition: a line it would write differently (plain
	// text quoted, quotes split up) is not one of its lines.
	if Join(words...) != line {
		return nil, false
	}
	return words, true
}

// splitFields splits line at the spaces outside single quotes; false when
// a quote is left open or a backslash escapes anything but a quote.
func splitFields(line string) ([]string, bool) {
	var fields []string
	start, quoted := 0, false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\\' && !quoted:
			if i+1 >= len(line) || line[i+1] != '\'' {
				return nil, false
			}
			i++
		case c == '\'':
			quoted = !quoted
		case c == ' ' && !quoted:
			fields = append(fields, line[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, false
	}
	return append(fields, line[start:]), true
}

// unquoteWord reads one word as Quote writes it: plain, or in single
// quotes with each embedded quote written as '\”.
func unquoteWord(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	if s[0] != '\'' {
		return s, isPlain(s)
	}
	if len(s) < 2 || s[len(s)-1] != '\'' {
		return "", false
	}
	return strings.ReplaceAll(s[1:len(s)-1], `'\''`, "'"), true
}
