package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/runbot/runbot/incident"
	"github.com/runbot/runbot/runbooks"
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
	// Steps are the report's step runs grouped by step id, in run order.
	Steps []stepGroup
}

type stepGroup struct {
	ID   string
	Runs []*runbooks.TargetRun
}

// load reads a run's incident, redacted. A visitor with a link sees only
// the run the link was signed for, never one its id is a prefix of.
func (s *Site) load(ctx context.Context, id string, v visitor) (*incident.Incident, error) {
	inc, err := incident.LoadRedacted(ctx, s.st, id, s.redact)
	if err != nil {
		return nil, err
	}
	if v.User == "" && inc.Run.ID != id {
		return nil, &LinkError{Err: ErrLinkInvalid}
	}
	return inc, nil
}

func (s *Site) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := s.who(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	inc, err := s.load(ctx, id, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	view, err := s.runView(inc, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "run", view)
}

// runView prepares a redacted incident for the run page.
func (s *Site) runView(inc *incident.Incident, v visitor) (*runView, error) {
	id := url.PathEscape(inc.Run.ID)
	view := &runView{Inc: inc, Visitor: v, Events: inc.Timeline(), Postmortem: withLink(id+"/postmortem.md", v)}
	var md bytes.Buffer
	if err := inc.Markdown(&md, s.pageURL(inc.Run.ID)); err != nil {
		return nil, fmt.Errorf("postmortem of %s: %w", inc.Run.ID, err)
	}
	view.Markdown = md.String()
	if rep := inc.Report; rep != nil {
		if _, err := timeline.FromReport(rep, timelineOptions(inc)); err == nil {
			view.Timeline = withLink(id+"/timeline.png", v)
			view.TimelineAlt = timelineAlt(inc)
		} else if !errors.Is(err, timeline.ErrNothingToDraw) {
			return nil, fmt.Errorf("timeline of %s: %w", inc.Run.ID, err)
		}
		index := map[string]int{}
		for _, tr := range rep.Steps {
			i, ok := index[tr.Step]
			if !ok {
				i = len(view.Steps)
				index[tr.Step] = i
				view.Steps = append(view.Steps, stepGroup{ID: tr.Step})
			}
			view.Steps[i].Runs = append(view.Steps[i].Runs, tr)
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

// timelineOptions marks the remediation's actions and its end on the
// picture, as `runbot show --timeline` does.
func timelineOptions(inc *incident.Incident) timeline.Options {
	var opts timeline.Options
	for _, p := range inc.Plans {
		for _, a := range p.Actions {
			opts.Markers = append(opts.Markers, timeline.Marker{Time: a.StartedAt, Label: a.Action + " " + a.Target})
		}
		if !p.Ended.IsZero() && len(p.Actions) > 0 {
			opts.Markers = append(opts.Markers, timeline.Marker{Time: p.Ended, Label: "remediation " + string(p.Plan.State)})
		}
	}
	return opts
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
	ctx, cancel := s.ctx(r)
	defer cancel()
	inc, err := s.load(ctx, id, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if inc.Report == nil {
		http.NotFound(w, r)
		return
	}
	// The picture is drawn from the redacted report: it shows log lines.
	data, err := timeline.PNG(inc.Report, timelineOptions(inc))
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
	ctx, cancel := s.ctx(r)
	defer cancel()
	inc, err := s.load(ctx, id, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := inc.Markdown(&buf, s.pageURL(inc.Run.ID)); err != nil {
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
