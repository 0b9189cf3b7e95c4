package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/runbot/runbot/store"
)

// The run list reads at most listScan of the newest runs that match what
// the store can filter on (runbook, trigger, deployment, since) and
// filters those on the rest (outcome, until); it shows at most listShow.
const (
	listScan = 1000
	listShow = 200
)

// errBadFilter is a filter the run list cannot read.
var errBadFilter = errors.New("bad filter")

// listFilter is the run list's query, as the form sends it.
type listFilter struct {
	Runbook    string
	Deployment string
	Trigger    string
	Outcome    string
	Since      string
	Until      string
	since      time.Time
	until      time.Time
}

// outcomes the filter offers: the store's, with "none" for a run that
// ended without one or still runs.
var outcomes = []string{"ok", "critical", "inconclusive", "error", "none"}

// timeForms are the forms since and until take: what a datetime-local
// input sends (read as UTC, as the form says), and RFC 3339.
var timeForms = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"}

func parseFilter(q url.Values) (listFilter, error) {
	f := listFilter{Runbook: q.Get("runbook"), Deployment: q.Get("deployment"), Trigger: q.Get("trigger"),
		Outcome: q.Get("outcome"), Since: q.Get("since"), Until: q.Get("until")}
	if f.Trigger != "" && !store.Trigger(f.Trigger).Valid() {
		return f, fmt.Errorf("%w: trigger %q: want one of %v", errBadFilter, f.Trigger, store.TriggerKinds())
	}
	if f.Outcome != "" && !slices.Contains(outcomes, f.Outcome) {
		return f, fmt.Errorf("%w: outcome %q: want one of %v", errBadFilter, f.Outcome, outcomes)
	}
	var err error
	if f.since, err = parseTime("since", f.Since); err != nil {
		return f, err
	}
	if f.until, err = parseTime("until", f.Until); err != nil {
		return f, err
	}
	return f, nil
}

func parseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, form := range timeForms {
		if t, err := time.ParseInLocation(form, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s %q: want a time such as 2026-06-18T20:44 (UTC)", errBadFilter, name, s)
}

// listRow is one run in the list.
type listRow struct {
	Run        store.Run
	Deployment string
	Diagnosis  string
}

// listView is what the list template shows.
type listView struct {
	Filter    listFilter
	Triggers  []store.Trigger
	Outcomes  []string
	Rows      []listRow
	Truncated bool
	User      string
}

func (s *Site) list(w http.ResponseWriter, r *http.Request) {
	v, err := s.who(r, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rf := store.RunFilter{Runbook: f.Runbook, Trigger: store.Trigger(f.Trigger), Since: f.since, Limit: listScan}
	if f.Deployment != "" {
		rf.Params = map[string]string{"deployment": f.Deployment}
	}
	runs, err := s.st.ListRuns(ctx, rf)
	if err != nil {
		s.fail(w, r, fmt.Errorf("list runs: %w", err))
		return
	}
	view := listView{Filter: f, Triggers: store.TriggerKinds(), Outcomes: outcomes, User: v.User}
	for _, run := range runs {
		if !f.until.IsZero() && run.StartedAt.After(f.until) {
			continue
		}
		if f.Outcome != "" && f.Outcome != outcomeName(run.Outcome) {
			continue
		}
		if len(view.Rows) == listShow {
			view.Truncated = true
			break
		}
		row := listRow{Run: run, Diagnosis: diagnosisOf(run)}
		// The list shows params and diagnoses: redacted as the page is.
		row.Run.Report = nil
		row.Run.RequestedBy = s.redact.Redact(run.RequestedBy)
		row.Run.Params = map[string]string{}
		for k, p := range run.Params {
			row.Run.Params[k] = s.redact.Redact(p)
		}
		row.Deployment = row.Run.Params["deployment"]
		row.Diagnosis = s.redact.Redact(row.Diagnosis)
		view.Rows = append(view.Rows, row)
	}
	view.Truncated = view.Truncated || len(runs) == listScan
	s.render(w, r, "list", view)
}

func outcomeName(o store.Outcome) string {
	if o == store.OutcomeNone {
		return "none"
	}
	return string(o)
}

// diagnosisOf reads only the diagnoses of a stored report.
func diagnosisOf(run store.Run) string {
	if len(run.Report) == 0 {
		return ""
	}
	var rep struct {
		Diagnoses []struct {
			Summary string `json:"summary"`
		} `json:"diagnoses"`
	}
	if json.Unmarshal(run.Report, &rep) != nil || len(rep.Diagnoses) == 0 {
		return ""
	}
	return rep.Diagnoses[0].Summary
}
