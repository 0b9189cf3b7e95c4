package checks

import (
	"bytes"
	"os"
	"regexp"
	"testing"
	"time"
)

// BenchmarkParseLog measures parsing the wedged decode log (759 short-iso
// lines, 210 kB); a 15-minute journal of a busy decode is about 20 times
// that.
func BenchmarkParseLog(b *testing.B) {
	raw, err := os.ReadFile(fixtures + "decode-wedged.log")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		parseLog(raw, FormatAuto, time.UTC, false)
	}
}

// BenchmarkLogAnalysis measures the progress, pattern and attribution pass
// over the parsed wedged decode log.
func BenchmarkLogAnalysis(b *testing.B) {
	raw, err := os.ReadFile(fixtures + "decode-wedged.log")
	if err != nil {
		b.Fatal(err)
	}
	entries := parseLog(raw, FormatAuto, time.UTC, false)
	now := utc("2026-06-18 21:07:30")
	a := logAnalysis{
		now: now, since: now.Add(-time.Hour), window: time.Hour, stallAfter: time.Minute, grace: 10 * time.Second,
		progress: regexp.MustCompile("Decode batch"), progressText: "Decode batch",
		patterns: compilePatterns(map[string]string{"aborts": `Decode transfer failed.*Aborted`}),
		probes:   []probeWindow{{ID: "rb-1", Start: now.Add(-time.Minute), End: now, CutShort: true}},
	}
	for b.Loop() {
		a.run(entries)
	}
}

// BenchmarkParsePromText measures parsing the decode engine's exposition.
func BenchmarkParsePromText(b *testing.B) {
	raw, err := os.ReadFile(fixtures + "metrics-decode-wedged.prom")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := parsePromText(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
	}
}
