package web

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/step"
)

// A run page shows long output in part: a step that logged 100,000 lines
// made an 80 MB page that took 1.5 GB to make, and no one reads the
// middle of it in a browser (the timeline picture still draws all of
// it). A list (evidence lines, events) of up to listMax entries is shown
// whole; of a longer one, the first and the last listKeep, with a note of
// how many were left out between them. A text (a step's raw output) is
// cut the same way by lines, and by bytes when its lines are few but
// long.
const (
	listMax       = 2000
	listKeep      = 1000
	textMaxLines  = 2000
	textKeepLines = 1000
	textMaxBytes  = 1 << 20
	textKeepBytes = 256 << 10
)

// cut says where a shown list left entries out: Omitted entries were
// between the first At kept ones and the rest.
type cut struct {
	At      int
	Omitted int
}

// cuts are what shrinkReport left out of the lists of a report: of each
// finding's evidence by finding index, and of each step run's evidence
// and events by step run index. A list left whole has no entry.
type cuts struct {
	findings map[int]cut
	evidence map[int]cut
	events   map[int]cut
}

// trimText keeps the start and the end of a text of more than
// textMaxLines lines or textMaxBytes bytes, with a line between them
// saying how much was left out. The text is redacted whole first: a
// secret that spans the cut (a private key begun in the part left out and
// ended in the part kept) is found only in the whole text.
func trimText(s string, r *redact.Redactor) string {
	if len(s) <= textMaxBytes && lineCount(s) <= textMaxLines {
		return s
	}
	s = r.Redact(s)
	head := headCut(s)
	tail := tailCut(s)
	if head >= tail {
		return s
	}
	left := s[head:tail]
	note := fmt.Sprintf("[… %d bytes left out here …]\n", len(left))
	if n := strings.Count(left, "\n"); n > 0 {
		note = fmt.Sprintf("[… %d lines (%d bytes) left out here …]\n", n, len(left))
	}
	if head > 0 && s[head-1] != '\n' {
		note = "\n" + note
	}
	// The concatenation is a new string: the whole text can be freed.
	return s[:head] + note + s[tail:]
}

// lineCount is the number of lines of s, the last one ended by a newline
// or not.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// headCut is where the kept start of s ends: after its first
// textKeepLines lines, at most textKeepBytes in, at a rune's start.
func headCut(s string) int {
	end := 0
	for range textKeepLines {
		i := strings.IndexByte(s[end:], '\n')
		if i < 0 || end+i+1 > textKeepBytes {
			break
		}
		end += i + 1
	}
	if end == 0 {
		end = min(len(s), textKeepBytes)
		for end > 0 && end < len(s) && !utf8.RuneStart(s[end]) {
			end--
		}
	}
	return end
}

// tailCut is where the kept end of s starts: before its last
// textKeepLines lines, at most textKeepBytes from the end, at a rune's
// start.
func tailCut(s string) int {
	start, end := len(s), len(s)
	// A text that ends its last line with a newline: that newline does
	// not start another line.
	if strings.HasSuffix(s, "\n") {
		end--
	}
	for range textKeepLines {
		i := strings.LastIndexByte(s[:end], '\n')
		if i < 0 || len(s)-(i+1) > textKeepBytes {
			break
		}
		start, end = i+1, i
	}
	if start == len(s) {
		start = max(0, len(s)-textKeepBytes)
		for start < len(s) && !utf8.RuneStart(s[start]) {
			start++
		}
	}
	return start
}

// shownLines are the lines of a shown list of evidence: Head, then a note
// that Omitted lines were left out when any were, then Tail.
type shownLines struct {
	Head    []string
	Omitted int
	Tail    []string
}

func showLines(l []string, c cut) shownLines {
	if c.Omitted == 0 {
		return shownLines{Head: l}
	}
	return shownLines{Head: l[:c.At], Omitted: c.Omitted, Tail: l[c.At:]}
}

// shownEvents are a step run's events as shownLines are its lines.
type shownEvents struct {
	Head    []step.Event
	Omitted int
	Tail    []step.Event
}

func showEvents(l []step.Event, c cut) shownEvents {
	if c.Omitted == 0 {
		return shownEvents{Head: l}
	}
	return shownEvents{Head: l[:c.At], Omitted: c.Omitted, Tail: l[c.At:]}
}
