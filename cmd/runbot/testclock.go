package main

import (
	"fmt"
	"os"
	"time"

	"github.com/runbot/runbot/daemon"
)

// testClockOffsetEnv names the test hook that shifts this replica's host
// clock for its store (daemon.WithHostClockOffset), so that an end-to-end
// test can run one replica 30 s fast or slow beside the others without
// changing the host's clock.
const testClockOffsetEnv = "RUNBOT_TEST_CLOCK_OFFSET"

// serveTestHooks are the daemon options serve's environment asks for. An
// empty variable is unset, as for the other RUNBOT_ variables; one that
// does not parse stops serve, since a test that set it would otherwise
// pass without the skew it meant to test.
func serveTestHooks() ([]daemon.Option, error) {
	v := os.Getenv(testClockOffsetEnv)
	if v == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("read the test hook %s=%q: want a duration such as 30s or -30s: %w", testClockOffsetEnv, v, err)
	}
	return []daemon.Option{daemon.WithHostClockOffset(d)}, nil
}
