package checks

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Log formats log_progress reads.
const (
	FormatAuto     = "auto"
	FormatJSON     = "json"
	FormatShortISO = "short-iso"
	FormatPlain    = "plain"
)

// logRecord is one line of a service's output as the log source delivered
// it: journald's timestamp and origin when there is a journal, and the
// message the service wrote.
type logRecord struct {
	// JournalTime is when journald received the line; zero for plain lines.
	JournalTime time.Time
	Ident       string
	PID         int
	Message     string
}

// parseLogLine reads one line in the given format; auto recognises
// `journalctl -o json`, `journalctl -o short-iso` (and short-iso-precise)
// and otherwise takes the line as the service wrote it. ok is false for lines
// that carry no log message: blank lines, journalctl's "-- No entries --"
// style markers, and JSON that does not parse (such as an entry cut short
// by the output cap).
func parseLogLine(line, format string) (logRecord, bool) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" || isJournalMarker(line) {
		return logRecord{}, false
	}
	switch format {
	case FormatJSON:
		return parseJournalJSON(line)
	case FormatShortISO:
		return parseShortISO(line)
	case FormatPlain:
		return logRecord{Message: line}, true
	}
	if strings.HasPrefix(line, "{") {
		if r, ok := parseJournalJSON(line); ok {
			return r, true
		}
	}
	if r, ok := parseShortISO(line); ok {
		return r, true
	}
	return logRecord{Message: line}, true
}

// isJournalMarker recognises journalctl's own lines: "-- No entries --",
// "-- Boot 5e0c… --", "-- Logs begin at … --", "-- Reboot --".
func isJournalMarker(line string) bool {
	return strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --")
}

// journalEntry holds the fields of `journalctl -o json` that runbot reads.
// MESSAGE is a string, or an array of bytes when it is not valid UTF-8 or
// holds control characters (ANSI colours, for instance), or null when it
// was too large to show.
type journalEntry struct {
	Realtime string          `json:"__REALTIME_TIMESTAMP"`
	Message  json.RawMessage `json:"MESSAGE"`
	Ident    string          `json:"SYSLOG_IDENTIFIER"`
	PID      string          `json:"_PID"`
}

func parseJournalJSON(line string) (logRecord, bool) {
	var e journalEntry
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		return logRecord{}, false
	}
	us, err := strconv.ParseInt(e.Realtime, 10, 64)
	if err != nil {
		return logRecord{}, false
	}
	r := logRecord{JournalTime: time.UnixMicro(us).UTC(), Ident: e.Ident}
	r.PID, _ = strconv.Atoi(e.PID)
	var s string
	var nums []int
	switch {
	case json.Unmarshal(e.Message, &s) == nil:
		r.Message = s
	case json.Unmarshal(e.Message, &nums) == nil:
		b := make([]byte, len(nums))
		for i, n := range nums {
			b[i] = byte(n)
		}
		r.Message = string(b)
	}
	return r, true
}

// parseShortISO reads a `journalctl -o short-iso` or `-o short-iso-precise`
// line: "2026-06-18T20:38:03+00:00 gpu-node-01 serve.sh[48213]: message".
// Older systemd prints the offset as +0000. It is written out by hand
// because it runs on every line of a journal that may hold tens of
// thousands.
func parseShortISO(line string) (logRecord, bool) {
	stamp, rest, ok := strings.Cut(line, " ")
	if !ok || len(stamp) < len("2006-01-02T15:04:05Z") || stamp[4] != '-' || stamp[10] != 'T' {
		return logRecord{}, false
	}
	t, err := parseISOTime(stamp)
	if err != nil {
		return logRecord{}, false
	}
	host, rest, ok := strings.Cut(rest, " ")
	if !ok || host == "" {
		return logRecord{}, false
	}
	colon := strings.IndexByte(rest, ':')
	if colon <= 0 || strings.ContainsAny(rest[:colon], " \t") {
		return logRecord{}, false
	}
	r := logRecord{JournalTime: t, Ident: rest[:colon], Message: strings.TrimPrefix(rest[colon+1:], " ")}
	if open := strings.IndexByte(r.Ident, '['); open > 0 && strings.HasSuffix(r.Ident, "]") {
		pid, err := strconv.Atoi(r.Ident[open+1 : len(r.Ident)-1])
		if err != nil {
			return logRecord{}, false
		}
		r.Ident, r.PID = r.Ident[:open], pid
	}
	return r, true
}

// parseISOTime accepts RFC 3339 with a comma or dot before the fraction and
// an offset with or without a colon.
func parseISOTime(s string) (time.Time, error) {
	s = strings.Replace(s, ",", ".", 1)
	if n := len(s); n > 5 && (s[n-5] == '+' || s[n-5] == '-') && !strings.Contains(s[n-5:], ":") {
		s = s[:n-2] + ":" + s[n-2:]
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err
}
