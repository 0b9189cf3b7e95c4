package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runview"
)

// help is generated from the catalog, so it lists exactly the runbooks and
// trigger words this runbot has.
func (h *Handler) help() chat.Message {
	c := h.cfg.Command
	m := chat.Message{Title: "runbot: runbooks that diagnose, explain and (with approval) fix services"}
	m.Sections = append(m.Sections, chat.Section{Heading: "Commands", Lines: []chat.Line{
		{Text: c + " run RUNBOOK [key=value …]  run any runbook", Code: true},
		{Text: c + " list  the runbooks", Code: true},
		{Text: c + " explain RUNBOOK [key=value …]  what it checks and would run", Code: true},
		{Text: c + " status [RUN_ID]  a run, or what is running", Code: true},
		{Text: c + " history  recent runs", Code: true},
		{Text: c + " rearm DEPLOYMENT DIAGNOSIS  re-arm the breaker a failed fix opened (approvers only)", Code: true},
	}})
	var lines []chat.Line
	for _, rb := range h.catalog().All() {
		if rb.Triggers.Command == "" {
			continue
		}
		lines = append(lines, chat.Line{Text: strings.TrimSpace(c + " " + rb.Triggers.Command + " " + argNames(rb) + "  " + titleOf(rb)), Code: true})
	}
	if len(lines) > 0 {
		m.Sections = append(m.Sections, chat.Section{Heading: "Runbook shortcuts", Lines: lines})
	}
	m.Notes = []string{`Values with spaces go in quotes: key="a b". Results are posted in the channel; replies like this one only you see.`}
	return m
}

func titleOf(rb *runbooks.Runbook) string {
	if rb.Title != "" {
		return rb.Title
	}
	return rb.Name
}

func (h *Handler) list() chat.Message {
	return chat.Message{Title: "Runbooks", Sections: []chat.Section{{Lines: h.runbookLines()}}}
}

func (h *Handler) runbookList() string {
	var names []string
	for _, rb := range h.catalog().All() {
		names = append(names, rb.Name)
	}
	return "Runbooks: " + strings.Join(names, ", ") + "."
}

func (h *Handler) runbookLines() []chat.Line {
	var lines []chat.Line
	for _, rb := range h.catalog().All() {
		lines = append(lines, chat.Line{Text: rb.Name + ": " + titleOf(rb) + ". " + h.usageOf(rb)})
	}
	return lines
}

// explain describes a runbook from its definition; given params, it also
// lists every command and request a run would make, running nothing.
func (h *Handler) explain(ctx context.Context, words []string) chat.Message {
	if len(words) == 0 {
		return errorReply("Which runbook? "+chat.Code(h.cfg.Command+" explain RUNBOOK")+".", h.runbookList())
	}
	rb, err := h.disp.Runbook(words[0])
	if err != nil {
		return errorReply(err.Error()+".", h.runbookList())
	}
	m := chat.Message{Title: titleOf(rb) + " (" + rb.Name + ")"}
	m.Sections = append(m.Sections, chat.Section{Text: strings.TrimSpace(rb.Doc), Lines: []chat.Line{{Text: "Usage: " + h.usageOf(rb)}}})
	var params []chat.Line
	for _, p := range rb.Params {
		t := fmt.Sprintf("%s (%s", p.Name, p.Type)
		switch {
		case p.Required:
			t += ", required"
		case p.HasDef:
			t += fmt.Sprintf(", default %q", p.Default)
		}
		t += ")"
		if len(p.Values) > 0 {
			t += " one of " + strings.Join(p.Values, ", ")
		}
		if p.Doc != "" {
			t += ": " + p.Doc
		}
		params = append(params, chat.Line{Text: t})
	}
	if len(params) > 0 {
		m.Sections = append(m.Sections, chat.Section{Heading: "Params", Lines: params})
	}
	var steps []chat.Line
	for _, s := range rb.Steps {
		t := fmt.Sprintf("%s: %s on %s", s.ID, s.Check, strings.Join(s.Targets, ", "))
		if len(s.Needs) > 0 {
			t += " after " + strings.Join(s.Needs, ", ")
		}
		steps = append(steps, chat.Line{Text: t})
	}
	m.Sections = append(m.Sections, chat.Section{Heading: "Steps", Lines: steps})
	var findings []chat.Line
	for _, f := range rb.Findings {
		findings = append(findings, chat.Line{Status: runview.SeverityStatus(f.Severity), Text: f.ID + " when " + f.When})
	}
	for _, d := range rb.Diagnoses {
		t := "diagnosis " + d.ID + " when " + d.When
		if d.Remediate != "" {
			t += ", proposes " + d.Remediate
		}
		findings = append(findings, chat.Line{Status: runview.SeverityStatus(d.Severity), Text: t})
	}
	if len(findings) > 0 {
		m.Sections = append(m.Sections, chat.Section{Heading: "Findings and diagnoses", Lines: findings})
	}
	for _, r := range rb.Remediations {
		s := chat.Section{Heading: "Remediation " + r.Name}
		for _, a := range r.Actions {
			s.Lines = append(s.Lines, chat.Line{Text: a.Action + " on " + strings.Join(a.Targets, ", ")})
		}
		t := "approval by " + strings.Join(r.Approval.Approvers, ", ")
		if r.Approval.TwoPerson {
			t += ", two-person rule"
		}
		s.Lines = append(s.Lines, chat.Line{Text: t})
		m.Sections = append(m.Sections, s)
	}
	if len(words) > 1 {
		m.Sections = append(m.Sections, h.planned(ctx, rb, words[1:]))
	}
	return m
}

// planned lists what a run with the given params would do on each target.
func (h *Handler) planned(ctx context.Context, rb *runbooks.Runbook, words []string) chat.Section {
	s := chat.Section{Heading: "A run with these params would"}
	params, err := bindArgs(rb, words)
	if err != nil {
		s.Status, s.Text = chat.StatusError, err.Error()
		return s
	}
	p, err := h.engine().Prepare(ctx, rb, params)
	if err != nil {
		s.Status, s.Text = chat.StatusError, err.Error()
		return s
	}
	var code []string
	for _, ps := range h.engine().Explain(p) {
		code = append(code, fmt.Sprintf("%s (%s) on %s, timeout %s", ps.Step, ps.Check, ps.Target, ps.Timeout))
		for _, l := range ps.Lines {
			code = append(code, "    "+l)
		}
	}
	s.Code = strings.Join(code, "\n")
	return s
}
