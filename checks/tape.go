package checks

import (
	"context"
	"time"
)

// Tape is the seam between the checks that observe over the network
// (http_probe, metrics_sample) and what they observe, and it owns their
// waiting. A run that records observations passes a Tape that performs
// each exchange and keeps what it returned; a replay passes one that hands
// back what was kept, so that the check's own interpretation (parsing an
// exposition, summarising samples) runs again on the recorded data. Checks
// that run commands need no Tape: their seam is remote.Runner.
//
// The seam is what the check saw, not the bytes on the wire: a probe that
// hung for 35 s is replayed as "no byte in 35 s" at once, which a replayed
// TCP stream could only reproduce by hanging again.
type Tape interface {
	// Probe returns the observation of one http_probe exchange: live, do
	// performs it; in a replay, do is not called.
	Probe(ctx context.Context, url string, do func() HTTPProbeOutput) (HTTPProbeOutput, error)
	// Scrape returns one read of a Prometheus exposition: live, do
	// performs it; in a replay, do is not called.
	Scrape(ctx context.Context, url string, do func() Scrape) (Scrape, error)
	// Sleep waits for d, or returns at once in a replay (where time comes
	// from the recording).
	Sleep(ctx context.Context, d time.Duration) error
}

// Scrape is one raw read of a metrics endpoint, before parsing: its time,
// the exposition text, or why there is none.
type Scrape struct {
	Time time.Time
	// Err says why the scrape failed (transport error, non-200 status);
	// empty when Body holds the exposition.
	Err  string
	Body []byte
}

// wait sleeps through env's Tape when it has one.
func wait(ctx context.Context, env Env, d time.Duration) error {
	if env.Tape != nil {
		return env.Tape.Sleep(ctx, d)
	}
	return sleep(ctx, d)
}
