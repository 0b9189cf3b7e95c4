package checks

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/remote"
)

// TimezoneHost is the log_progress timezone that learns the zone of a log
// file's stamps on the target host. SGLang stamps its lines in its
// process's local time (Python logging's localtime), so a file's stamps
// mean nothing without that zone.
const TimezoneHost = "host"

// logClock is what the host says about a log file's time: its zone and
// when the file was last written.
type logClock struct {
	loc   *time.Location // a named zone, or the host's offset
	named bool           // the step named the zone: use it as it is
	mtime time.Time      // when the file was last written; zero when unknown
	note  string         // why the zone is a guess, for the evidence
}

// logZone asks the host for its UTC offset and the file's modification
// time, for a plain file whose zone the step does not name. The journal
// stamps every entry itself and needs neither. When the host cannot say,
// the stamps are read as UTC and the note says so, since a wrong zone
// shifts every silence the step measures.
func logZone(ctx context.Context, env Env, name string, src logSource) (logClock, error) {
	if name != TimezoneHost {
		loc, err := time.LoadLocation(name)
		if err != nil {
			return logClock{}, fmt.Errorf("read log of %s: timezone %q: %w", env.Target.Name(), name, err)
		}
		return logClock{loc: loc, named: true}, nil
	}
	if !src.file {
		return logClock{loc: time.UTC, named: true}, nil
	}
	line := "date +%z && " + shell.Join("stat", "-c", "%Y", "--", src.path)
	out, err := env.Target.Runner.Run(ctx, remote.Command{Line: line, MaxOutput: 256})
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("`%s` exited %d", line, out.ExitCode)
	}
	var c logClock
	if err == nil {
		fields := strings.Fields(string(out.Stdout))
		if len(fields) != 2 {
			err = fmt.Errorf("read the host's UTC offset and the file's time from %q", strings.TrimSpace(string(out.Stdout)))
		} else if c.loc, err = parseOffset(fields[0]); err == nil {
			var sec int64
			if sec, err = strconv.ParseInt(fields[1], 10, 64); err == nil {
				c.mtime = time.Unix(sec, 0)
			}
		}
	}
	if err != nil {
		return logClock{loc: time.UTC, note: fmt.Sprintf("the host's time zone is unknown (%v): SGLang's stamps were read as UTC", err)}, nil
	}
	return c, nil
}

// resolve picks the zone the stamps are read in. The file's own newest
// stamp against its modification time says the zone of the process that
// wrote it, which need not be the host's (a unit can set TZ); when the two
// do not line up on a whole quarter hour (the last line has no stamp, or
// something else wrote the file later), the host's offset stands.
func (c logClock) resolve(raw []byte, format string, reversed bool) (*time.Location, string) {
	if c.named || c.mtime.IsZero() {
		return c.loc, c.note
	}
	entries := parseLog(raw, format, time.UTC, reversed)
	if len(entries) == 0 || entries[len(entries)-1].Time.IsZero() {
		return c.loc, c.note
	}
	diff := entries[len(entries)-1].Time.Sub(c.mtime)
	offset := diff.Round(15 * time.Minute)
	if skew := diff - offset; skew < -2*time.Minute || skew > 2*time.Minute || offset.Abs() > 14*time.Hour {
		return c.loc, c.note
	}
	if _, host := time.Now().In(c.loc).Zone(); time.Duration(host)*time.Second == offset {
		return c.loc, c.note
	}
	return time.FixedZone(formatOffset(offset), int(offset/time.Second)), c.note
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

// formatOffset names a fixed zone as date +%z does.
func formatOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%02d%02d", sign, int(d.Hours()), int(d.Minutes())%60)
}
