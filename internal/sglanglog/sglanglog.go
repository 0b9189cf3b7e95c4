// Package sglanglog reads the lines SGLang's loggers print: the
// "[stamp DP0 TP0]" prefix, the wall-clock stamp resolved against
// journald's, the "Prefill batch" and "Decode batch" lines of every era,
// and the request and room ids a line names. It knows the format, not
// where the lines come from.
package sglanglog

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Line is a log message split into the prefix the SGLang logger puts
// in front of it and the text.
type Line struct {
	// Stamp is the printed wall-clock time read as if it were UTC; the
	// host's zone is applied later (see ResolveTime). Zero when the line
	// has no time of its own (a traceback line, a glog line).
	Stamp time.Time
	// Ranks is the rank prefix, e.g. "DP0 TP0 EP0"; empty for the HTTP,
	// tokenizer and detokenizer processes and for foreign lines.
	Ranks string
	// Text is the message after the prefix.
	Text string
}

// leadingStamp matches a bare timestamp at the start of a line, as NIXL's
// own logger ("2026-04-30 18:32:58 NIXL INFO …") and Python's default
// format ("2026-06-18 20:38:03,123 - …") print it.
var leadingStamp = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?\s`)

// Parse splits msg into its prefix and text. A line without a
// recognised prefix is returned whole as Text with a zero Stamp.
func Parse(msg string) Line {
	if l, ok := parsePrefix(msg); ok {
		return l
	}
	if len(msg) > 0 && msg[0] >= '0' && msg[0] <= '9' {
		if m := leadingStamp.FindStringSubmatch(msg); m != nil {
			if t, ok := parseStamp(strings.Replace(m[1], "T", " ", 1), m[2]); ok {
				return Line{Stamp: t, Text: msg}
			}
		}
	}
	return Line{Text: msg}
}

// parsePrefix reads "[2026-06-18 20:38:03 DP0 TP0] text" with an
// optional ".mmm" (or ",mmm") fraction and any rank parts in the order
// SGLang builds them: DP, PP, ATTN_CP, MOE_DP, TP, EP. It is written out
// by hand because it runs on every line of a journal that may hold tens of
// thousands.
func parsePrefix(msg string) (Line, bool) {
	const stampLen = len("2006-01-02 15:04:05")
	if len(msg) < stampLen+2 || msg[0] != '[' {
		return Line{}, false
	}
	end := strings.IndexByte(msg, ']')
	if end < stampLen+1 {
		return Line{}, false
	}
	inner := msg[1:end]
	stamp, rest := inner[:stampLen], inner[stampLen:]
	frac := ""
	if len(rest) > 0 && (rest[0] == '.' || rest[0] == ',') {
		n := 1
		for n < len(rest) && n <= 9 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return Line{}, false
		}
		frac, rest = rest[1:n], rest[n:]
	}
	if rest != "" && rest[0] != ' ' {
		return Line{}, false
	}
	ranks := strings.TrimSpace(rest)
	for part := range strings.FieldsSeq(ranks) {
		if !isRankPart(part) {
			return Line{}, false
		}
	}
	t, ok := parseStamp(stamp, frac)
	if !ok {
		return Line{}, false
	}
	text := strings.TrimPrefix(msg[end+1:], " ")
	return Line{Stamp: t, Ranks: ranks, Text: text}, true
}

// isRankPart recognises one rank part: capitals and underscores, then
// digits (TP0, DP12, ATTN_CP0, MOE_DP1).
func isRankPart(s string) bool {
	i := 0
	for i < len(s) && (s[i] >= 'A' && s[i] <= 'Z' || s[i] == '_' && i > 0) {
		i++
	}
	if i == 0 || i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseStamp(s, frac string) (time.Time, bool) {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		return time.Time{}, false
	}
	if frac != "" {
		ns, _ := strconv.Atoi((frac + "000000000")[:9])
		t = t.Add(time.Duration(ns))
	}
	return t, true
}

// ResolveTime turns a printed wall-clock stamp into an absolute time.
// SGLang prints local time without a zone. When journald's timestamp is
// known, the host's UTC offset is the difference between the two rounded to
// a quarter hour (every zone offset is a multiple of 15 minutes), so the
// stamp's finer precision is kept without knowing the zone. Without a
// journal the stamp is read in loc. A stamp that disagrees with journald by
// more than a few minutes beyond any offset is not trusted.
func ResolveTime(stamp, journal time.Time, loc *time.Location) time.Time {
	switch {
	case stamp.IsZero():
		return journal
	case journal.IsZero():
		return time.Date(stamp.Year(), stamp.Month(), stamp.Day(), stamp.Hour(), stamp.Minute(), stamp.Second(), stamp.Nanosecond(), loc).UTC()
	}
	diff := stamp.Sub(journal)
	offset := diff.Round(15 * time.Minute)
	if skew := diff - offset; skew > 2*time.Minute || skew < -2*time.Minute {
		return journal
	}
	return stamp.Add(-offset).UTC()
}

// Batch is a parsed "Prefill batch" or "Decode batch" line.
type Batch struct {
	Kind string // Prefill or Decode
	// Iter is the forward iteration SGLANG_LOG_FORWARD_ITERS adds, -1 when
	// absent.
	Iter int
	// Fields maps each "#name: value" or "name: value" pair, with the
	// leading # dropped: "running-req", "transfer-req", "token usage",
	// "gen throughput (token/s)", "cuda graph" (1 for True). Percentages
	// lose their sign.
	Fields map[string]float64
}

// batchHead matches every era's batch line start: "Decode batch." (old),
// "Decode batch," (late 2025 on), "Decode batch [123]," (with forward
// iterations).
var batchHead = regexp.MustCompile(`^(Prefill|Decode) batch(?: ?\[(\d+)\])?[.,] ?`)

// ParseBatch reads a batch line's fields; it tolerates the trailing
// ", " older builds print and any fields it does not know.
func ParseBatch(text string) (Batch, bool) {
	m := batchHead.FindStringSubmatchIndex(text)
	if m == nil {
		return Batch{}, false
	}
	b := Batch{Kind: text[m[2]:m[3]], Iter: -1, Fields: map[string]float64{}}
	if m[4] >= 0 {
		b.Iter, _ = strconv.Atoi(text[m[4]:m[5]])
	}
	for part := range strings.SplitSeq(text[m[1]:], ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), ": ")
		if !ok {
			continue
		}
		key = strings.TrimPrefix(strings.TrimSpace(key), "#")
		val = strings.TrimSuffix(strings.TrimSpace(val), "%")
		switch val {
		case "True":
			b.Fields[key] = 1
		case "False":
			b.Fields[key] = 0
		default:
			if f, err := strconv.ParseFloat(val, 64); err == nil {
				b.Fields[key] = f
			}
		}
	}
	if b.Kind == "Prefill" {
		// Renamed fields are also given under their newest name, so one
		// expression reads every era (reference §1.2).
		for old, now := range prefillFieldRenames {
			if v, ok := b.Fields[old]; ok {
				if _, has := b.Fields[now]; !has {
					b.Fields[now] = v
				}
			}
		}
	}
	return b, true
}

// prefillFieldRenames maps older Prefill batch field names to the newest:
// mid-2025 PD builds printed #transferring-req for what later builds call
// #inflight-req, and #prealloc-req became #bootstrap-req.
var prefillFieldRenames = map[string]string{
	"transferring-req": "inflight-req",
	"prealloc-req":     "bootstrap-req",
}

var (
	roomID    = regexp.MustCompile(`bootstrap_room=(\d+)`)
	requestID = regexp.MustCompile(`\brid=['"]?([^'",\s)]+)`)
)

// IDs returns the bootstrap room and request id a line names, if any.
// The room is the same on prefill and decode; the rid differs per engine
// unless the client chose it (as http_probe does).
func IDs(text string) (room, rid string) {
	if m := roomID.FindStringSubmatch(text); m != nil {
		room = m[1]
	}
	if m := requestID.FindStringSubmatch(text); m != nil {
		rid = m[1]
	}
	return room, rid
}
