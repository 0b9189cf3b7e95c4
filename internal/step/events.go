package step

// Event kinds, the values of Event.Kind. The checks record these events;
// attribution, timelines and reports read them.
const (
	// EventProbe is the request http_probe made: Time and End bound the
	// exchange; Labels carry request_id, outcome (one of the Probe*
	// values), phase, status, method and url.
	EventProbe = "probe"
	// EventProgress is the last progress line log_progress found: Time,
	// Text, Labels ranks.
	EventProgress = "progress"
	// EventProgressRate counts progress lines in one bucket of
	// log_progress's window: Time and End bound the bucket, Value is the
	// count (zero buckets included: absence is evidence).
	EventProgressRate = "progress_rate"
	// EventStall spans from the last progress line to now when stalled.
	EventStall = "stall"
	// EventLogMatch is one occurrence of a pattern: Labels pattern, room,
	// rid, attribution (AttrEcho or AttrUnexplained), by (id or time) and
	// request_id (the probe's), Text the first line's message.
	EventLogMatch = "log_match"
	// EventSample is one value of one series at one scrape: Value, with
	// Labels metric (the name found) and series (its labels).
	EventSample = "sample"
	// EventScrapeError is a failed scrape; Text says why.
	EventScrapeError = "scrape_error"
)

// Attributions of a matched log line, the values of the "attribution"
// label of EventLogMatch events.
const (
	// AttrEcho means this run's own probe caused the line.
	AttrEcho = "echo"
	// AttrUnexplained means nothing this run did caused it.
	AttrUnexplained = "unexplained"
)

// Probe outcomes, the values of the "outcome" label of EventProbe events.
const (
	ProbeOK        = "ok"
	ProbeBadStatus = "bad_status"
	ProbeTimeout   = "timeout"
	ProbeRefused   = "refused"
	ProbeError     = "error"
)
