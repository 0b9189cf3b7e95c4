package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/failures"
	"github.com/runbot/runbot/runbooks/record"
	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/timeline"
)

// runView is what the run page template shows.
type runView struct {
	Inc      *incident.Incident
	Visitor  visitor
	Events   []incident.Event
	Markdown string
	// Timeline is the picture's URL; "" when the run recorded nothing to
	// draw.
	Timeline    string
	TimelineAlt string
	Postmortem  string
	// Findings are the report's findings with the part of their evidence
	// the page shows.
	Findings []findingView
	// Steps are the report's step runs grouped by step id, in run order.
	Steps []stepGroup
	// Unreachable says, a line a host, which hosts could not be reached,
	// shown before the diagnosis.
	Unreachable []string
	// Folds are the step runs that failed the same way on one host, a line
	// each, shown before the steps; each of their runs links to its line
	// instead of repeating the error.
	Folds []foldView
	// Votes says, by plan id, what each plan waiting for votes shows
	// about voting: why it is blocked, the Approve/Deny form, or why the
	// visitor has none. Voted is what became of the visitor's vote.
	Votes map[string]planVote
	Voted *voteNotice
}

// foldView is one line of step runs that failed the same way on one host,
// with the anchor their runs link to.
type foldView struct {
	Anchor string
	Line   string
	// Label is what each of its runs says instead of the error.
	Label string
}

// findingView is a finding with how many evidence lines it has and which
// of them the page shows.
type findingView struct {
	runbooks.FindingResult
	Lines int
	Shown shownLines
}

type stepGroup struct {
	ID   string
	Runs []stepRun
}

// stepRun is a step's run with the part of its evidence and events the
// page shows.
type stepRun struct {
	*runbooks.TargetRun
	Shown       shownLines
	ShownEvents shownEvents
	// Fold is the line its error is folded into, if it is.
	Fold *foldView
}

// load reads a run's incident, redacted, from st (the site's store, or
// one that holds the report back: see loadPage). A visitor with a link
// sees only the run the link was signed for, never one its id is a
// prefix of.
func (s *Site) load(ctx context.Context, st incident.Store, id string, v visitor) (*incident.Incident, error) {
	inc, err := incident.LoadRedacted(ctx, st, id, s.redact)
	if err != nil {
		return nil, err
	}
	if v.User == "" && inc.Run.ID != id {
		return nil, &LinkError{Err: ErrLinkInvalid}
	}
	return inc, nil
}

// heldReport is a Store that hands incident a run without its report and
// keeps the report for loadPage, which cuts it before it is redacted.
type heldReport struct {
	incident.Store
	raw []byte
}

// GetRun implements incident.Store.
func (h *heldReport) GetRun(ctx context.Context, id string) (store.Run, error) {
	run, err := h.Store.GetRun(ctx, id)
	h.raw, run.Report = run.Report, nil
	return run, err
}

// loadPage reads a run for its page or its postmortem draft. Everything
// but the report comes through incident.LoadRedacted; the report is cut
// to what the page shows (shrinkReport) before it is redacted and
// decoded, as LoadRedacted would the whole of it.
func (s *Site) loadPage(ctx context.Context, id string, v visitor) (*incident.Incident, cuts, error) {
	hold := &heldReport{Store: s.st}
	inc, err := s.load(ctx, hold, id, v)
	if err != nil {
		return nil, cuts{}, err
	}
	raw := hold.raw
	hold.raw = nil
	if len(raw) == 0 {
		return inc, cuts{}, nil
	}
	shown, c, err := shrinkReport(raw, s.redact)
	if err != nil {
		return nil, cuts{}, fmt.Errorf("load incident %s: %w", inc.Run.ID, err)
	}
	if shown, err = s.redact.JSON(shown); err != nil {
		return nil, cuts{}, fmt.Errorf("load incident %s: %w", inc.Run.ID, err)
	}
	if inc.Report, err = record.ReportOf(store.Run{ID: inc.Run.ID, Status: inc.Run.Status, Report: shown}); err != nil {
		return nil, cuts{}, fmt.Errorf("load incident %s: %w", inc.Run.ID, err)
	}
	return inc, c, nil
}

// draftOf is inc as its postmortem draft is written from: with each
// finding's evidence as long as it was, the lines the page left out blank.
// The draft quotes a finding's first lines, which the page keeps, and
// counts the rest.
func draftOf(inc *incident.Incident, c cuts) *incident.Incident {
	if inc.Report == nil || len(c.findings) == 0 {
		return inc
	}
	d, rep := *inc, *inc.Report
	rep.Findings = slices.Clone(rep.Findings)
	for i, fc := range c.findings {
		ev := rep.Findings[i].Evidence
		full := make([]string, len(ev)+fc.Omitted)
		copy(full, ev[:fc.At])
		copy(full[fc.At+fc.Omitted:], ev[fc.At:])
		rep.Findings[i].Evidence = full
	}
	d.Report = &rep
	return &d
}

func (s *Site) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := s.who(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	leave, err := s.enter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer leave()
	ctx, cancel := s.ctx(r)
	defer cancel()
	inc, c, err := s.loadPage(ctx, id, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	view, err := s.runView(inc, c, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	view.Votes, view.Voted = s.votes(inc, v, r.URL.Query())
	s.render(w, r, "run", view)
}

// runView prepares a redacted incident, cut as c says, for the run page.
func (s *Site) runView(inc *incident.Incident, c cuts, v visitor) (*runView, error) {
	id := url.PathEscape(inc.Run.ID)
	view := &runView{Inc: inc, Visitor: v, Events: inc.Timeline(), Postmortem: withLink(id+"/postmortem.md", v)}
	var md bytes.Buffer
	if err := draftOf(inc, c).Markdown(&md, s.pageURL(inc.Run.ID)); err != nil {
		return nil, fmt.Errorf("postmortem of %s: %w", inc.Run.ID, err)
	}
	view.Markdown = md.String()
	if rep := inc.Report; rep != nil {
		if _, err := timeline.FromReport(rep, timeline.Options{Markers: timeline.IncidentMarkers(inc)}); err == nil {
			view.Timeline = withLink(id+"/timeline.png", v)
			view.TimelineAlt = timelineAlt(inc)
		} else if !errors.Is(err, timeline.ErrNothingToDraw) {
			return nil, fmt.Errorf("timeline of %s: %w", inc.Run.ID, err)
		}
		for i, f := range rep.Findings {
			fc := c.findings[i]
			view.Findings = append(view.Findings, findingView{FindingResult: f, Lines: len(f.Evidence) + fc.Omitted, Shown: showLines(f.Evidence, fc)})
		}
		for _, h := range failures.Unreachable(rep.Steps) {
			view.Unreachable = append(view.Unreachable, h.String())
		}
		foldOf := map[*runbooks.TargetRun]*foldView{}
		for _, g := range failures.Groups(rep.Steps) {
			if !g.Folded() {
				continue
			}
			fv := &foldView{Anchor: fmt.Sprintf("fold-%d", len(view.Folds)+1), Line: g.Line(),
				Label: fmt.Sprintf("one of %d failing the same way on %s", len(g.Runs), g.Host)}
			view.Folds = append(view.Folds, *fv)
			for _, tr := range g.Runs {
				foldOf[tr] = fv
			}
		}
		index := map[string]int{}
		for i, tr := range rep.Steps {
			g, ok := index[tr.Step]
			if !ok {
				g = len(view.Steps)
				index[tr.Step] = g
				view.Steps = append(view.Steps, stepGroup{ID: tr.Step})
			}
			view.Steps[g].Runs = append(view.Steps[g].Runs, stepRun{TargetRun: tr,
				Shown: showLines(tr.Evidence, c.evidence[i]), ShownEvents: showEvents(tr.Events, c.events[i]), Fold: foldOf[tr]})
		}
	}
	return view, nil
}

// pageURL is the run page's address without a signature, for the
// postmortem draft: a draft outlives any link, and is pasted where a
// credential must not go.
func (s *Site) pageURL(runID string) string {
	if s.base == nil {
		return ""
	}
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/runs/" + url.PathEscape(runID)
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String()
}

// timelineAlt describes the picture for those who cannot see it.
func timelineAlt(inc *incident.Incident) string {
	alt := "Timeline of run " + inc.Run.ID + ": probes, log progress and counters on one time axis"
	if rep := inc.Report; rep != nil && len(rep.Diagnoses) > 0 {
		alt += "; diagnosis: " + rep.Diagnoses[0].Summary
	}
	return alt + "."
}

func (s *Site) timelinePNG(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := s.who(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	leave, err := s.enter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer leave()
	ctx, cancel := s.ctx(r)
	defer cancel()
	// The picture draws every event of the report: it is read whole.
	inc, err := s.load(ctx, s.st, id, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if inc.Report == nil {
		http.NotFound(w, r)
		return
	}
	// The picture is drawn from the redacted report: it shows log lines.
	data, err := timeline.PNG(inc.Report, timeline.Options{Markers: timeline.IncidentMarkers(inc)})
	if errors.Is(err, timeline.ErrNothingToDraw) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("timeline of %s: %w", inc.Run.ID, err))
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(data)
}

func (s *Site) postmortem(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := s.who(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	leave, err := s.enter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer leave()
	ctx, cancel := s.ctx(r)
	defer cancel()
	inc, c, err := s.loadPage(ctx, id, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := draftOf(inc, c).Markdown(&buf, s.pageURL(inc.Run.ID)); err != nil {
		s.fail(w, r, fmt.Errorf("postmortem of %s: %w", inc.Run.ID, err))
		return
	}
	// Plain text, so that a browser shows the draft instead of saving it;
	// the file name says it is Markdown.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("inline; filename=%q", "postmortem-"+inc.Run.ID+".md"))
	_, _ = w.Write(buf.Bytes())
}

// pretty shows a decoded JSON value indented, for a step's raw values.
func pretty(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
