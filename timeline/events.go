package timeline

// Event kinds and labels the checks record. They are copied here, not
// imported: the timeline reads reports, and the layering rules keep it
// away from the checks package. A test holds the two in step.
const (
	kindProbe        = "probe"         // checks.EventProbe
	kindSample       = "sample"        // checks.EventSample
	kindProgress     = "progress"      // checks.EventProgress
	kindProgressRate = "progress_rate" // checks.EventProgressRate
	kindStall        = "stall"         // checks.EventStall
	kindLogMatch     = "log_match"     // checks.EventLogMatch
)

// Attributions of a matched log line: the values of the log_match events'
// "attribution" label.
const (
	// Echo means this run's own probe caused the line (checks.AttrEcho).
	Echo = "echo"
	// Unexplained means nothing this run did caused it (checks.AttrUnexplained).
	Unexplained = "unexplained"
)

// Probe outcomes (checks.Outcome*), the values of the probe events'
// "outcome" label.
const (
	outcomeOK        = "ok"
	outcomeBadStatus = "bad_status"
	outcomeTimeout   = "timeout"
	outcomeRefused   = "refused"
	outcomeError     = "error"
)
