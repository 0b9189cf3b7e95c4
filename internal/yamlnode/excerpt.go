package yamlnode

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Excerpt returns the line of src the problem points at, numbered, with a
// caret under its column, as go-task and compilers show them:
//
//	6 |   - runbook: dsik
//	  |              ^
//
// src is the whole file the problem is in. Excerpt is "" when the line is
// not in src (the file changed since, or the problem has no position). A
// tab before the column is repeated in the caret line so that the caret
// stays under the character in any terminal.
func (p Problem) Excerpt(src []byte) string {
	if p.Line < 1 {
		return ""
	}
	lines := bytes.Split(src, []byte("\n"))
	if p.Line > len(lines) {
		return ""
	}
	line := strings.TrimRight(string(lines[p.Line-1]), "\r")
	num := fmt.Sprintf("%4d", p.Line)
	var caret strings.Builder
	// yaml.v3 counts columns in characters, from 1.
	col := max(p.Col, 1)
	i := 0
	for _, r := range line {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
		i++
	}
	// A column past the line's end (a missing value) points just after it.
	for ; i < col-1 && i <= utf8.RuneCountInString(line); i++ {
		caret.WriteByte(' ')
	}
	pad := strings.Repeat(" ", len(num))
	return fmt.Sprintf("%s | %s\n%s | %s^", num, line, pad, caret.String())
}
