package step

import (
	"regexp"
	"time"
)

// Ago marks in an evidence line where it says how long ago t was. A check
// reads its target at its own moment, and two steps of one run may quote
// the same log line a few seconds apart; were each to count the age from
// its own read, one line would show two ages in one report. The mark
// keeps t instead, and Ages writes every mark of a report from one
// instant. A mark reads as the time it holds should a line ever be shown
// unresolved.
func Ago(t time.Time) string {
	return agoOpen + t.UTC().Format(time.RFC3339Nano) + agoClose
}

const (
	agoOpen  = "⟨ago "
	agoClose = "⟩"
)

var agoMark = regexp.MustCompile(agoOpen + `([^` + agoClose + `]+)` + agoClose)

// Ages replaces every Ago mark in s with how long before ref its time was,
// e.g. "21.9s ago". A time after ref (a line logged while the last read
// ran, or a host clock a little ahead) is "0s ago", never a negative age.
func Ages(s string, ref time.Time) string {
	return agoMark.ReplaceAllStringFunc(s, func(m string) string {
		t, err := time.Parse(time.RFC3339Nano, agoMark.FindStringSubmatch(m)[1])
		if err != nil {
			return m
		}
		return AgeText(ref, t)
	})
}

// AgesOf is Ages over lines, in a new slice; nil stays nil.
func AgesOf(lines []string, ref time.Time) []string {
	if lines == nil {
		return nil
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = Ages(l, ref)
	}
	return out
}

// AgeText says how long before ref t was, rounded for reading (to the
// millisecond under a second, to a tenth of a second under a minute, to
// the second above), and never negative.
func AgeText(ref, t time.Time) string {
	d := max(ref.Sub(t), 0)
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Millisecond)
	}
	return d.String() + " ago"
}
