package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// auditValueMax is how much of one audit detail value a line shows. An
// action's record holds whole diffs and file backups; `show --format
// json` has them in full.
const auditValueMax = 80

// AuditDetail renders an audit event's JSON detail for a person, as
// key=value pairs in key order: a long value is cut with its size said,
// so a config edit's backup does not fill the screen with base64.
func AuditDetail(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		s, rest := shorten(string(raw))
		return s + rest
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+auditValue(fields[k]))
	}
	return strings.Join(parts, " ")
}

func auditValue(v any) string {
	switch x := v.(type) {
	case string:
		s, rest := shorten(x)
		if s == "" || strings.ContainsAny(s, " \t\n\"=") {
			s = strconv.Quote(s)
		}
		return s + rest
	case json.Number, bool, nil:
		return fmt.Sprint(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > auditValueMax {
		return fmt.Sprintf("{… %d bytes}", len(b))
	}
	return string(b)
}

// shorten cuts s to auditValueMax runes; rest says how long it was.
func shorten(s string) (cut, rest string) {
	if utf8.RuneCountInString(s) <= auditValueMax {
		return s, ""
	}
	return string([]rune(s)[:auditValueMax]), fmt.Sprintf("… (%d bytes)", len(s))
}
