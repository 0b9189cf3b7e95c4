// Package failures sums up the step runs of a report that did not run, so
// that what failed the same way is said once: the hosts that could not be
// reached (Unreachable), and the runs on one host that failed for the same
// cause (Groups). The console, the chat message and the web page show
// them; the language does not need them.
package failures

import (
	"fmt"
	"strings"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/runbooks"
)

// Host says that a host could not be reached: no step ran there, and the
// steps that failed failed to connect.
type Host struct {
	Host string
	// Cause is the connection error, once, without what each step was
	// doing when it met it.
	Cause string
	// Stopped counts the step runs on the host that did not run.
	Stopped int
}

// String is the one line a report shows before anything else.
func (h Host) String() string {
	return fmt.Sprintf("cannot reach %s (%d step %s stopped): %s", h.Host, h.Stopped, plural(h.Stopped, "run", "runs"), h.Cause)
}

// Group is the step runs on one host that did not run for the same
// cause, in the order the report holds them.
type Group struct {
	Host string
	// Cause is the error the runs share: the whole error text, or for a
	// connection error only the part the SSH runner wrote, so that the
	// different ways checks wrap it fold together.
	Cause string
	Runs  []*runbooks.TargetRun
}

// Folded reports whether the group is shown as one line: a failure that
// happened once is shown as it is.
func (g Group) Folded() bool { return len(g.Runs) > 1 }

// StepIDs are the ids of the group's steps, each once, in report order.
func (g Group) StepIDs() []string {
	var ids []string
	seen := map[string]bool{}
	for _, tr := range g.Runs {
		if !seen[tr.Step] {
			seen[tr.Step] = true
			ids = append(ids, tr.Step)
		}
	}
	return ids
}

// foldNames is how many step ids a folded line names before "+N more".
const foldNames = 3

// Line is the group as one line: "N steps on HOST (a, b, c +N more):
// CAUSE". It says "step runs" when a step ran on the host for more than
// one target, as the count is then not a count of steps.
func (g Group) Line() string {
	ids := g.StepIDs()
	names := ids
	more := ""
	if len(ids) > foldNames+1 {
		names, more = ids[:foldNames], fmt.Sprintf(" +%d more", len(ids)-foldNames)
	}
	what := plural(len(g.Runs), "step", "steps")
	if len(ids) != len(g.Runs) {
		what = plural(len(g.Runs), "step run", "step runs")
	}
	return fmt.Sprintf("%d %s on %s (%s%s): %s", len(g.Runs), what, g.Host, strings.Join(names, ", "), more, g.Cause)
}

// Groups groups the finished step runs that did not run and say why
// by host and by cause, in the order of each group's first run. Runs still
// going and runs that ran are in no group.
func Groups(runs []*runbooks.TargetRun) []Group {
	type key struct{ host, cause string }
	index := map[key]int{}
	var out []Group
	for _, tr := range runs {
		if tr == nil || tr.Status == "" || tr.Status.Ran() || tr.Error == "" {
			continue
		}
		cause, ok := ConnectionError(tr)
		if !ok {
			cause = tr.Error
		}
		k := key{hostOf(tr), cause}
		i, seen := index[k]
		if !seen {
			i = len(out)
			index[k] = i
			out = append(out, Group{Host: k.host, Cause: cause})
		}
		out[i].Runs = append(out[i].Runs, tr)
	}
	return out
}

// Unreachable lists, in report order, the hosts where no step ran,
// at least one step failed to connect and no step failed for another
// reason than that. Steps skipped, timed out or cancelled there are taken
// as consequences: a step that waits for a connection that never comes
// times out with its own error. The cause is the connection error most of
// the host's runs met, the first one on a tie.
func Unreachable(runs []*runbooks.TargetRun) []Host {
	type host struct {
		ran, other bool
		stopped    int
		causes     map[string]int
		order      []string
	}
	hosts := map[string]*host{}
	var order []string
	for _, tr := range runs {
		if tr == nil {
			continue
		}
		name := hostOf(tr)
		h := hosts[name]
		if h == nil {
			h = &host{causes: map[string]int{}}
			hosts[name] = h
			order = append(order, name)
		}
		switch {
		case tr.Status.Ran():
			h.ran = true
		case tr.Status == "":
			// Still running: it decides nothing yet.
		default:
			h.stopped++
			if cause, ok := ConnectionError(tr); ok {
				if h.causes[cause] == 0 {
					h.order = append(h.order, cause)
				}
				h.causes[cause]++
			} else if tr.Status == step.Error {
				h.other = true
			}
		}
	}
	var out []Host
	for _, name := range order {
		h := hosts[name]
		if h.ran || h.other || len(h.order) == 0 || name == "" {
			continue
		}
		best := h.order[0]
		for _, c := range h.order[1:] {
			if h.causes[c] > h.causes[best] {
				best = c
			}
		}
		out = append(out, Host{Host: name, Cause: best, Stopped: h.stopped})
	}
	return out
}

// ConnectionError returns the part of a step run's error that says its
// host could not be reached or would not let runbot in, and whether there
// is one. A run the engine has just carried out says so in ConnectError,
// set from the SSH transport's typed error.
//
// A report read back from JSON (the store's, history's, a redacted copy)
// or replayed from a recording keeps errors only as text: ConnectError is
// not part of the JSON form, which stays as it was written. For those this
// falls back to reading the text the SSH runner writes for its connect
// error ("connect to HOST (ADDRESS): ..." or "... via jump host ..."),
// which checks wrap in what they were doing.
func ConnectionError(tr *runbooks.TargetRun) (string, bool) {
	host := hostOf(tr)
	if host == "" || tr.Error == "" {
		return "", false
	}
	if tr.ConnectError != "" {
		return tr.ConnectError, true
	}
	i := strings.Index(tr.Error, "connect to "+host+" (")
	if i < 0 {
		return "", false
	}
	return tr.Error[i:], true
}

// hostOf is where a step run ran: its host, or its target when the host is
// not known.
func hostOf(tr *runbooks.TargetRun) string {
	if tr.Host != "" {
		return tr.Host
	}
	return tr.Target
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
