package failures_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/failures"
)

const (
	keyErr     = "connect to gpu-1 (10.0.0.1:22): no usable ssh key for gpu-1: read identity file /k: permission denied"
	refusedErr = "connect to gpu-2 (10.0.0.2:22): dial tcp 10.0.0.2:22: connect: connection refused"
)

func stepRun(id, host string, st step.Status, err string) *runbooks.TargetRun {
	return &runbooks.TargetRun{Step: id, Check: "c", Target: "worker", Host: host, Status: st, Error: err}
}

// folded is a group as the test compares it: its line, or its single
// run's step when it is not folded.
func folded(groups []failures.Group) []string {
	var out []string
	for _, g := range groups {
		if g.Folded() {
			out = append(out, g.Line())
		} else {
			out = append(out, "alone: "+g.Runs[0].Step+" on "+g.Host+": "+g.Cause)
		}
	}
	return out
}

// TestFailureGroups: step runs that failed the same way on one host fold
// into one line, and a host where nothing ran because nothing connected is
// said to be unreachable once, with the connection error without what each
// check was doing.
func TestFailureGroups(t *testing.T) {
	tests := []struct {
		name        string
		runs        []*runbooks.TargetRun
		groups      []string
		unreachable []failures.Host
	}{
		{
			name: "one host unreachable among two",
			runs: []*runbooks.TargetRun{
				stepRun("health", "gpu-0", step.OK, ""),
				stepRun("health", "gpu-1", step.Error, keyErr),
				stepRun("unit", "gpu-0", step.OK, ""),
				stepRun("unit", "gpu-1", step.Error, "read state of sglang on worker: "+keyErr),
				stepRun("logs", "gpu-1", step.Error, "read /var/log/x on gpu-1: "+keyErr),
				stepRun("flags", "gpu-1", step.Skipped, "needs unit, which did not run on worker (error)"),
			},
			groups: []string{
				"3 steps on gpu-1 (health, unit, logs): " + keyErr,
				"alone: flags on gpu-1: needs unit, which did not run on worker (error)",
			},
			unreachable: []failures.Host{{Host: "gpu-1", Cause: keyErr, Stopped: 4}},
		},
		{
			name: "two hosts with different errors",
			runs: []*runbooks.TargetRun{
				stepRun("health", "gpu-1", step.Error, keyErr),
				stepRun("health", "gpu-2", step.Error, refusedErr),
				stepRun("unit", "gpu-1", step.Error, keyErr),
				stepRun("unit", "gpu-2", step.Error, refusedErr),
			},
			groups: []string{
				"2 steps on gpu-1 (health, unit): " + keyErr,
				"2 steps on gpu-2 (health, unit): " + refusedErr,
			},
			unreachable: []failures.Host{{Host: "gpu-1", Cause: keyErr, Stopped: 2}, {Host: "gpu-2", Cause: refusedErr, Stopped: 2}},
		},
		{
			name: "one step failing alone is not folded",
			runs: []*runbooks.TargetRun{
				stepRun("health", "gpu-1", step.OK, ""),
				stepRun("unit", "gpu-1", step.Error, "systemctl: command not found"),
			},
			groups: []string{"alone: unit on gpu-1: systemctl: command not found"},
		},
		{
			name: "errors with different text are not folded",
			runs: []*runbooks.TargetRun{
				stepRun("unit", "gpu-1", step.Error, "systemctl: command not found"),
				stepRun("logs", "gpu-1", step.Error, "journalctl: command not found"),
				stepRun("health", "gpu-1", step.Timeout, "step health on worker timed out after 5s"),
			},
			groups: []string{
				"alone: unit on gpu-1: systemctl: command not found",
				"alone: logs on gpu-1: journalctl: command not found",
				"alone: health on gpu-1: step health on worker timed out after 5s",
			},
		},
		{
			name: "a host where one step ran is reachable",
			runs: []*runbooks.TargetRun{
				stepRun("health", "gpu-1", step.OK, ""),
				stepRun("unit", "gpu-1", step.Error, keyErr),
				stepRun("logs", "gpu-1", step.Error, keyErr),
			},
			groups: []string{"2 steps on gpu-1 (unit, logs): " + keyErr},
		},
		{
			name: "a connection error and another error on one host",
			runs: []*runbooks.TargetRun{
				stepRun("unit", "gpu-1", step.Error, keyErr),
				stepRun("logs", "gpu-1", step.Error, "journalctl: command not found"),
			},
			groups: []string{
				"alone: unit on gpu-1: " + keyErr,
				"alone: logs on gpu-1: journalctl: command not found",
			},
		},
		{
			name: "connecting to systemd is not connecting to the host",
			runs: []*runbooks.TargetRun{
				stepRun("unit", "gpu-1", step.Error, "connect to systemd on gpu-1 over ssh (/run/systemd/private): refused"),
			},
			groups: []string{"alone: unit on gpu-1: connect to systemd on gpu-1 over ssh (/run/systemd/private): refused"},
		},
		{
			name: "runs still going are in no group",
			runs: []*runbooks.TargetRun{
				stepRun("unit", "gpu-1", "", ""),
				stepRun("logs", "gpu-1", step.Error, keyErr),
			},
			groups:      []string{"alone: logs on gpu-1: " + keyErr},
			unreachable: []failures.Host{{Host: "gpu-1", Cause: keyErr, Stopped: 1}},
		},
		{
			name: "many steps are named up to a few",
			runs: []*runbooks.TargetRun{
				stepRun("a", "gpu-1", step.Error, keyErr),
				stepRun("b", "gpu-1", step.Error, keyErr),
				stepRun("c", "gpu-1", step.Error, keyErr),
				stepRun("d", "gpu-1", step.Error, keyErr),
				stepRun("e", "gpu-1", step.Error, keyErr),
				stepRun("e", "gpu-1", step.Error, keyErr),
			},
			groups:      []string{"6 step runs on gpu-1 (a, b, c +2 more): " + keyErr},
			unreachable: []failures.Host{{Host: "gpu-1", Cause: keyErr, Stopped: 6}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.groups, folded(failures.Groups(tt.runs)))
			require.Equal(t, tt.unreachable, failures.Unreachable(tt.runs))
		})
	}
}

// TestHostLine: the line a report shows first names the host, the
// error once and how many step runs it stopped.
func TestHostLine(t *testing.T) {
	h := failures.Host{Host: "gpu-1", Cause: keyErr, Stopped: 42}
	require.Equal(t, "cannot reach gpu-1 (42 step runs stopped): "+keyErr, h.String())
}

// TestConnectionErrorTypedAndText: a run the engine just carried out says
// its connect error in ConnectError, which is taken as it is; a run read
// back from JSON has only its error's text, which is read instead.
func TestConnectionErrorTypedAndText(t *testing.T) {
	typed := stepRun("unit", "gpu-1", step.Error, "systemctl status on gpu-1: "+keyErr)
	typed.ConnectError = keyErr
	tests := []struct {
		name  string
		run   *runbooks.TargetRun
		cause string
		ok    bool
	}{
		{name: "typed", run: typed, cause: keyErr, ok: true},
		{name: "text of a recorded run", run: stepRun("unit", "gpu-1", step.Error, "systemctl status on gpu-1: "+keyErr), cause: keyErr, ok: true},
		{name: "text of another host", run: stepRun("unit", "gpu-3", step.Error, "systemctl status: "+keyErr)},
		{name: "no error", run: stepRun("unit", "gpu-1", step.OK, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cause, ok := failures.ConnectionError(tt.run)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.cause, cause)
		})
	}
}
