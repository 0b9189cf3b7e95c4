package checks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseLogLine(t *testing.T) {
	msg := "[2026-06-18 20:38:03 DP0 TP0] Decode batch, #running-req: 1"
	cases := []struct {
		name, in, format string
		ok               bool
		want             logRecord
	}{
		{"short-iso, new offset", "2026-06-18T20:38:03+00:00 gpu-node-01 serve_dsv4_decode.sh[48213]: " + msg, FormatAuto, true,
			logRecord{JournalTime: utc("2026-06-18 20:38:03"), Ident: "serve_dsv4_decode.sh", PID: 48213, Message: msg}},
		{"short-iso, old offset", "2026-06-18T22:38:03+0200 gpu-node-01 serve_dsv4_decode.sh[48213]: " + msg, FormatAuto, true,
			logRecord{JournalTime: utc("2026-06-18 20:38:03"), Ident: "serve_dsv4_decode.sh", PID: 48213, Message: msg}},
		{"short-iso-precise", "2026-06-18T20:38:03.123456+00:00 gpu-node-01 serve_dsv4_decode.sh[48213]: " + msg, FormatShortISO, true,
			logRecord{JournalTime: utc("2026-06-18 20:38:03.123456"), Ident: "serve_dsv4_decode.sh", PID: 48213, Message: msg}},
		{"short-iso without pid", "2026-06-18T20:38:03Z gpu-node-01 kernel: oops", FormatAuto, true,
			logRecord{JournalTime: utc("2026-06-18 20:38:03"), Ident: "kernel", Message: "oops"}},
		{"json", `{"__REALTIME_TIMESTAMP":"1781815083250000","MESSAGE":"` + msg + `","SYSLOG_IDENTIFIER":"serve_dsv4_decode.sh","_PID":"48213","__CURSOR":"s=1"}`, FormatAuto, true,
			logRecord{JournalTime: time.UnixMicro(1781815083250000).UTC(), Ident: "serve_dsv4_decode.sh", PID: 48213, Message: msg}},
		{"json with a byte-array message", `{"__REALTIME_TIMESTAMP":"1781815083000000","MESSAGE":[27,91,51,49,109,104,105]}`, FormatJSON, true,
			logRecord{JournalTime: time.UnixMicro(1781815083000000).UTC(), Message: "\x1b[31mhi"}},
		{"json with a null message", `{"__REALTIME_TIMESTAMP":"1781815083000000","MESSAGE":null}`, FormatJSON, true,
			logRecord{JournalTime: time.UnixMicro(1781815083000000).UTC()}},
		{"json cut short by the output cap", `{"__REALTIME_TIMESTAMP":"1781815083000000","MESS`, FormatAuto, true,
			logRecord{Message: `{"__REALTIME_TIMESTAMP":"1781815083000000","MESS`}},
		{"json forced, cut short", `{"__REALTIME_TIMESTAMP":"17818`, FormatJSON, false, logRecord{}},
		{"short-iso, empty message", "2026-06-18T20:38:03+00:00 gpu-node-01 serve.sh[1]:", FormatShortISO, true,
			logRecord{JournalTime: utc("2026-06-18 20:38:03"), Ident: "serve.sh", PID: 1}},
		{"short-iso forced on a plain line", msg, FormatShortISO, false, logRecord{}},
		{"looks like a date, is not journal", "2026-06-18 20:38:03 NIXL INFO x", FormatAuto, true, logRecord{Message: "2026-06-18 20:38:03 NIXL INFO x"}},
		{"plain sglang line", msg, FormatAuto, true, logRecord{Message: msg}},
		{"plain forced keeps a journal-looking line whole", "2026-06-18T20:38:03+00:00 h x[1]: y", FormatPlain, true,
			logRecord{Message: "2026-06-18T20:38:03+00:00 h x[1]: y"}},
		{"no entries marker", "-- No entries --", FormatAuto, false, logRecord{}},
		{"boot marker", "-- Boot 5e0c2a1b4f --", FormatAuto, false, logRecord{}},
		{"blank", "   ", FormatAuto, false, logRecord{}},
		{"carriage return", msg + "\r", FormatAuto, true, logRecord{Message: msg}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := parseLogLine(c.in, c.format)
			require.Equal(t, c.ok, ok)
			require.Equal(t, c.want, got)
		})
	}
}
