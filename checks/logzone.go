package checks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runbot/runbot/remote"
)

// TimezoneHost is the log_progress timezone that asks the target host for
// its zone. SGLang stamps its lines in host-local time (Python logging's
// localtime), so a file's stamps mean nothing without the host's offset.
const TimezoneHost = "host"

// hostZoneLine asks for the host's current UTC offset, e.g. "+0530".
const hostZoneLine = "date +%z"

// logZone returns the zone SGLang's stamps are read in. Only a plain file
// needs one: the journal stamps every entry itself. When the host cannot
// say, the stamps are read as UTC and the note says so, since a wrong zone
// shifts every silence the step measures.
func logZone(ctx context.Context, env Env, name string, file bool) (*time.Location, string, error) {
	if name != TimezoneHost {
		loc, err := time.LoadLocation(name)
		if err != nil {
			return nil, "", fmt.Errorf("read log of %s: timezone %q: %w", env.Target.Name(), name, err)
		}
		return loc, "", nil
	}
	if !file {
		return time.UTC, "", nil
	}
	out, err := env.Target.Runner.Run(ctx, remote.Command{Line: hostZoneLine, MaxOutput: 64})
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("`%s` exited %d", hostZoneLine, out.ExitCode)
	}
	var loc *time.Location
	if err == nil {
		loc, err = parseOffset(strings.TrimSpace(string(out.Stdout)))
	}
	if err != nil {
		return time.UTC, fmt.Sprintf("the host's time zone is unknown (%v): SGLang's stamps were read as UTC", err), nil
	}
	return loc, "", nil
}

// parseOffset reads date +%z's "+hhmm" as a fixed zone.
func parseOffset(s string) (*time.Location, error) {
	t, err := time.Parse("-0700", s)
	if err != nil {
		return nil, fmt.Errorf("read the host's UTC offset %q: %w", s, err)
	}
	_, off := t.Zone()
	return time.FixedZone(s, off), nil
}
