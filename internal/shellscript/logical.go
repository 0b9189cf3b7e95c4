package shellscript

import "strings"

// LogicalLine is one logical line of a shell script or unit file: physical
// lines joined where they end in a backslash, with comments removed.
type LogicalLine struct {
	File string
	// Line is the physical line the logical line starts on, from 1.
	Line int
	Text string
	// starts holds the offset in Text at which each physical line after
	// the first begins, so a match can be reported on its own line.
	starts []int
}

// LineAt returns the physical line number of offset off in Text.
func (l LogicalLine) LineAt(off int) int {
	n := l.Line
	for _, s := range l.starts {
		if off >= s {
			n++
		}
	}
	return n
}

// LogicalLines splits a shell script into logical lines, reading each
// physical line with ScanLine: a line ending in an unescaped backslash
// continues on the next one, as in the shell; comments (a # that starts a
// word outside quotes) are removed and end the logical line, so that a
// commented-out flag never counts. Lines left empty are dropped.
func LogicalLines(file, text string) []LogicalLine {
	return joinContinued(file, text, 1, func(l string) (string, bool) {
		sc := ScanLine(l)
		return l[:sc.Code], sc.Cont
	})
}

// UnitFileLines splits `systemctl cat` output into the logical lines of
// each unit file and drop-in it shows. systemctl marks the start of each
// file with a "# /path/to/file" line; lines starting with # or ; are
// comments in unit files, and a line ending in a backslash continues.
func UnitFileLines(out string) []LogicalLine {
	var lines []LogicalLine
	file, start := "", 0
	var body []string
	flush := func() {
		if len(body) > 0 {
			lines = append(lines, joinContinued(file, strings.Join(body, "\n"), start, unitLine)...)
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

// unitLine reads one physical line of a unit file: a comment is a whole
// line and continues nothing.
func unitLine(l string) (string, bool) {
	l = strings.TrimRight(l, "\r")
	if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
		return "", false
	}
	if trailingBackslashes(l)%2 == 1 {
		return l[:len(l)-1], true
	}
	return l, false
}

// joinContinued joins continued physical lines. line reads one physical
// line: its text without comment or continuation backslash, and whether it
// continues on the next. first is the number of text's first line.
func joinContinued(file, text string, first int, line func(string) (string, bool)) []LogicalLine {
	var out []LogicalLine
	var cur strings.Builder
	var starts []int
	start := 0
	emit := func() {
		joined := cur.String()
		s := strings.TrimSpace(joined)
		if s != "" {
			lead := len(joined) - len(strings.TrimLeft(joined, " \t"))
			var adj []int
			for _, o := range starts {
				adj = append(adj, o-lead)
			}
			out = append(out, LogicalLine{File: file, Line: start, Text: s, starts: adj})
		}
		cur.Reset()
		starts = nil
	}
	for i, l := range strings.Split(text, "\n") {
		if cur.Len() == 0 && starts == nil {
			start = first + i
		} else {
			starts = append(starts, cur.Len())
		}
		body, cont := line(l)
		cur.WriteString(body)
		if cont {
			cur.WriteByte(' ')
			continue
		}
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
