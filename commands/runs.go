package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runview"
	"github.com/runbot/runbot/store"
)

// status shows one run as its message shows it (without buttons), or what
// is running now.
func (h *Handler) status(ctx context.Context, words []string) chat.Message {
	if len(words) == 0 {
		runs, err := h.store.ListRuns(ctx, store.RunFilter{Status: store.RunRunning, Limit: 20})
		if err != nil {
			return errorReply("Could not read the runs: " + err.Error())
		}
		if len(runs) == 0 {
			return chat.Message{Title: "Nothing is running", Status: chat.StatusOK, Notes: []string{chat.Code(h.cfg.Command+" history") + " shows recent runs."}}
		}
		return chat.Message{Title: "Running now", Status: chat.StatusRunning, Sections: []chat.Section{{Lines: runLines(runs)}}}
	}
	run, err := h.store.GetRun(ctx, words[0])
	var amb *store.AmbiguousIDError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errorReply(fmt.Sprintf("No run %q.", words[0]), chat.Code(h.cfg.Command+" history")+" shows recent runs.")
	case errors.As(err, &amb):
		return errorReply(fmt.Sprintf("%q matches several runs: %s.", words[0], strings.Join(amb.Matches, ", ")))
	case err != nil:
		return errorReply("Could not read the run: " + err.Error())
	}
	m, ok := h.disp.ActiveView(run.ID)
	if !ok {
		rb, _ := h.catalog().Get(run.Runbook)
		if m, err = runview.Stored(run, rb); err != nil {
			return errorReply(err.Error())
		}
		if run.Status != store.RunRunning && len(run.Report) == 0 {
			m.Status = chat.StatusError
		}
	}
	m.Buttons = nil
	m.Facts = append(m.Facts, chat.Fact{Label: "Status", Text: string(run.Status)})
	return m
}

// history lists recent runs, newest first.
func (h *Handler) history(ctx context.Context) chat.Message {
	runs, err := h.store.ListRuns(ctx, store.RunFilter{Limit: 15})
	if err != nil {
		return errorReply("Could not read the runs: " + err.Error())
	}
	if len(runs) == 0 {
		return chat.Message{Title: "No runs yet"}
	}
	return chat.Message{Title: "Recent runs", Sections: []chat.Section{{Lines: runLines(runs)}}}
}

func runLines(runs []store.Run) []chat.Line {
	var lines []chat.Line
	for _, r := range runs {
		st := chat.StatusRunning
		what := string(r.Status)
		if r.Status != store.RunRunning {
			st, what = runview.RunOutcomeStatus(r), string(r.Outcome)
			if what == "" {
				what = string(r.Status)
			}
		}
		text := fmt.Sprintf("%s %s: %s, %s %s", r.ID, r.Runbook, what, r.StartedAt.UTC().Format(time.DateTime+" MST"), string(r.Trigger))
		l := chat.Line{Status: st, Text: text}
		if r.Trigger == store.TriggerChat {
			l.Text += " by"
			l.Users = []string{r.RequestedBy}
		}
		lines = append(lines, l)
	}
	return lines
}
