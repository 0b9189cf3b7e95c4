package schedule

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// summaryWindow is the span a daily summary covers.
const summaryWindow = 24 * time.Hour

// summaryView summarises the last day of scheduled audits: per schedule,
// its runs by outcome, how many were posted, the latest result, and the
// ticks skipped or lost to a panic since the previous summary. Quiet
// audits show here, so silence is known to mean "all is well".
func (s *Scheduler) summaryView(ctx context.Context) (chat.Message, error) {
	now := s.now()
	if s.store == nil {
		return chat.Message{}, errors.New("scheduler has no store")
	}
	runs, err := s.store.ListRuns(ctx, store.RunFilter{Trigger: store.TriggerSchedule, Since: now.Add(-summaryWindow), Limit: 10000})
	if err != nil {
		return chat.Message{}, fmt.Errorf("list scheduled runs: %w", err)
	}
	byName := map[string][]store.Run{}
	for _, r := range runs {
		byName[r.RequestedBy] = append(byName[r.RequestedBy], r)
	}
	m := chat.Message{Title: "Scheduled audits: the last 24 hours", Status: chat.StatusOK}
	for _, e := range s.entries {
		rs := byName[e.Name]
		sec := chat.Section{Heading: e.Name, Status: chat.StatusOK}
		counts := map[store.Outcome]int{}
		posted := 0
		for _, r := range rs {
			counts[r.Outcome]++
			if r.Message != nil {
				posted++
			}
		}
		var parts []string
		for _, o := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, fmt.Sprintf("%s %d", outcomeName(o), counts[o]))
		}
		line := fmt.Sprintf("%d run(s)", len(rs))
		if len(parts) > 0 {
			line += ": " + strings.Join(parts, ", ")
		}
		if len(e.fleet) > 0 {
			posted = messages(rs)
		}
		line += fmt.Sprintf("; %d posted", posted)
		sec.Lines = append(sec.Lines, chat.Line{Text: line})
		if len(rs) > 0 && len(e.fleet) > 0 {
			sec.Status, line = fleetLatest(e, rs)
			sec.Lines = append(sec.Lines, chat.Line{Status: sec.Status, Text: line})
		} else if len(rs) > 0 {
			last := rs[0] // newest first
			sec.Status = runview.RunOutcomeStatus(last)
			sec.Lines = append(sec.Lines, chat.Line{Status: sec.Status, Text: fmt.Sprintf("Latest: %s at %s (%s)", outcomeName(last.Outcome), chat.Stamp(last.StartedAt), last.ID)})
		} else {
			sec.Status = chat.StatusWarning
			sec.Lines = append(sec.Lines, chat.Line{Status: chat.StatusWarning, Text: "No run in the last 24 hours (" + e.Cron + ")"})
		}
		if n := e.skipped.Swap(0); n > 0 {
			sec.Lines = append(sec.Lines, chat.Line{Status: chat.StatusWarning, Text: fmt.Sprintf("%d tick(s) skipped: the previous run was still going", n)})
		}
		if n := e.panicked.Swap(0); n > 0 {
			sec.Status = chat.StatusError
			sec.Lines = append(sec.Lines, chat.Line{Status: chat.StatusError, Text: fmt.Sprintf("%d run(s) crashed (see the logs)", n)})
		}
		if worse(sec.Status, m.Status) {
			m.Status = sec.Status
		}
		m.Sections = append(m.Sections, sec)
	}
	if len(s.entries) == 0 {
		m.Sections = append(m.Sections, chat.Section{Text: "No audits are scheduled."})
	}
	return m, nil
}

// postSummary posts the daily summary.
func (s *Scheduler) postSummary(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m, err := s.summaryView(ctx)
	if err != nil {
		s.log.Error("audit summary not made", "err", err)
		return
	}
	channel := s.cfg.SummaryChannel
	if channel == "" {
		channel = s.disp.Channel()
	}
	if s.chat == nil {
		s.log.Info("audit summary (no chat configured)", "summary", m.Text())
		return
	}
	if _, err := s.chat.Post(ctx, channel, "", m); err != nil {
		s.log.Error("audit summary not posted", "channel", channel, "err", err)
	}
}

// messages counts the distinct messages a fleet schedule's runs were
// posted in: one per firing that posted, however many runs it named.
func messages(rs []store.Run) int {
	seen := map[store.MessageRef]bool{}
	for _, r := range rs {
		if r.Message != nil {
			seen[*r.Message] = true
		}
	}
	return len(seen)
}

// fleetLatest is a fleet schedule's state: each deployment's latest run,
// counted by outcome, and the worst of them, since one deployment's run
// says nothing of the others.
func fleetLatest(e *scheduled, rs []store.Run) (chat.Status, string) {
	seen := map[string]bool{}
	counts := map[store.Outcome]int{}
	status := chat.StatusOK
	for _, r := range rs { // newest first
		dep := r.Params[e.depParam]
		if seen[dep] {
			continue
		}
		seen[dep] = true
		counts[r.Outcome]++
		if st := runview.RunOutcomeStatus(r); worse(st, status) {
			status = st
		}
	}
	var parts []string
	for _, o := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", outcomeName(o), counts[o]))
	}
	return status, fmt.Sprintf("Latest, per deployment (%d of %d): %s", len(seen), len(e.fleet), strings.Join(parts, ", "))
}

func outcomeName(o store.Outcome) string {
	if o == store.OutcomeNone {
		return "unfinished"
	}
	return string(o)
}

var statusRank = map[chat.Status]int{chat.StatusOK: 0, chat.StatusRunning: 1, chat.StatusInconclusive: 2, chat.StatusWarning: 3, chat.StatusError: 4, chat.StatusCritical: 5}

func worse(a, b chat.Status) bool { return statusRank[a] > statusRank[b] }
