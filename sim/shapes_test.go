package sim_test

import (
	"regexp"
	"strings"
)

// lineShape is one kind of log line, as a regex over the line without the journald
// prefix. The shapes are written against the fixtures in testdata/sglang, the
// simulator's output is held to the same shapes.
type lineShape struct {
	name string
	re   *regexp.Regexp
}

const (
	ts   = `\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?`
	rank = `(?: DP\d+)?(?: TP\d+)?\]`
	num  = `\d+`
	flt  = `\d+\.\d\d`
)

func shape(name, pattern string) lineShape {
	return lineShape{name: name, re: regexp.MustCompile("^" + pattern + "$")}
}

// fixtureShapes are the line kinds that occur in the fixtures.
var fixtureShapes = []lineShape{
	shape("decode batch", ts+rank+` Decode batch, #running-req: `+num+`, #token: `+num+`, token usage: `+flt+
		`, pre-allocated usage: `+flt+`, #prealloc-req: `+num+`, #transfer-req: `+num+`, #retracted-req: `+num+
		`, cuda graph: True, gen throughput \(token/s\): `+flt+`, #queue-req: `+num),
	shape("prefill batch", ts+rank+` Prefill batch, #new-seq: `+num+`, #new-token: `+num+`, #cached-token: `+num+
		`, token usage: `+flt+`, #running-req: `+num+`, #queue-req: `+num+`, #pending-token: `+num+`, #prealloc-req: `+num+
		`, #inflight-req: `+num+`, cuda graph: False, input throughput \(token/s\): `+flt),
	// The exception names its reason on mooncake; NIXL raises a bare "NIXL
	// KVReceiver/KVSender Exception" whatever the reason (reference §7).
	shape("decode transfer failed", ts+rank+` Decode transfer failed for request rank=`+num+` decode_req\.req\.rid='[^']+' `+
		`decode_req\.req\.bootstrap_room=(\d+) with exception (?:KVTransferError\(bootstrap_room=(\d+)\): .+|NIXL KVReceiver Exception)`),
	shape("prefill transfer failed", ts+rank+` Prefill transfer failed for request rank=`+num+` req\.rid='[^']+' `+
		`req\.bootstrap_room=(\d+) with exception (?:KVTransferError\(bootstrap_room=(\d+)\): .+|NIXL KVSender Exception)`),
	shape("nixl kv manager", ts+rank+` NIXL KVManager initialized with backend: \w+`),
	shape("nixl api", `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d NIXL INFO    _api\.py:\d+ Backend \w+ was instantiated`),
	shape("uvicorn access", ts+`\] INFO:     [0-9.]+:\d+ - "(?:GET|POST) /\S* HTTP/1\.1" \d{3} [A-Za-z ]+`),
	shape("uvicorn lifecycle", ts+`\] INFO:     (?:Started server process \[\d+\]|Waiting for application startup\.|`+
		`Application startup complete\.|Uvicorn running on http://\S+ \(Press CTRL\+C to quit\))`),
	shape("fired up", ts+`\] The server is fired up and ready to roll!`),
}

// extraShapes are lines the reference documents that the fixtures happen not to hold.
var extraShapes = []lineShape{
	shape("server args", ts+`\] server_args=ServerArgs\(.*disaggregation_mode='(?:prefill|decode)'.*\)`),
	shape("prefill warmup", ts+`\] End of prefill disaggregation mode warmup with status 200, resp: .*`),
	shape("uvicorn shutdown", ts+`\] INFO:     (?:Shutting down|Waiting for application shutdown\.|Application shutdown complete\.|Finished server process \[\d+\])`),
	shape("sigquit", ts+`\] Received sigquit from a child process\. It usually means the child failed\.`),
	shape("health check failed", ts+`\] Health check failed\. Server couldn't get a response from detokenizer for last [0-9.]+ seconds\. tic start time: \d\d:\d\d:\d\d\. last_heartbeat time: \d\d:\d\d:\d\d`),
}

// journalPrefix is what `journalctl -o short-iso` puts before each line.
var journalPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d \S+ \S+\[\d+\]: `)

func stripJournal(l string) string { return journalPrefix.ReplaceAllString(l, "") }

// classify returns the names of the shapes a line matches.
func classify(l string, shapes []lineShape) []string {
	var names []string
	for _, s := range shapes {
		if s.re.MatchString(l) {
			names = append(names, s.name)
		}
	}
	return names
}

func nonEmpty(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
