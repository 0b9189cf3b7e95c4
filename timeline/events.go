package timeline

import "github.com/runbot/runbot/internal/step"

// Attributions of a matched log line, the values of Mark.Attribution: the
// log_match events' "attribution" label. The event kinds and labels the
// timeline reads are internal/step's, where the checks take them from too.
const (
	// Echo means this run's own probe caused the line.
	Echo = step.AttrEcho
	// Unexplained means nothing this run did caused it.
	Unexplained = step.AttrUnexplained
)
