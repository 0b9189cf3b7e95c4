package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/runbooks"
)

// help is generated from the catalog, so it lists exactly the runbooks and
// trigger words this runbot has.
func (b *Bot) help() Message {
	c := b.cfg.Command
	m := Message{Title: "runbot: runbooks that diagnose, explain and (with approval) fix services"}
	m.Sections = append(m.Sections, Section{Heading: "Commands", Lines: []Line{
		{Text: c + " run RUNBOOK [key=value …]  run any runbook", Code: true},
		{Text: c + " list  the runbooks", Code: true},
		{Text: c + " explain RUNBOOK [key=value …]  what it checks and would run", Code: true},
		{Text: c + " status [RUN_ID]  a run, or what is running", Code: true},
		{Text: c + " history  recent runs", Code: true},
	}})
	var lines []Line
	for _, rb := range b.catalog.All() {
		if rb.Triggers.Command == "" {
			continue
		}
		lines = append(lines, Line{Text: strings.TrimSpace(c + " " + rb.Triggers.Command + " " + argNames(rb) + "  " + titleOf(rb)), Code: true})
	}
	if len(lines) > 0 {
		m.Sections = append(m.Sections, Section{Heading: "Runbook shortcuts", Lines: lines})
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

func (b *Bot) list() Message {
	return Message{Title: "Runbooks", Sections: []Section{{Lines: b.runbookLines()}}}
}

func (b *Bot) runbookList() string {
	var names []string
	for _, rb := range b.catalog.All() {
		names = append(names, rb.Name)
	}
	return "Runbooks: " + strings.Join(names, ", ") + "."
}

func (b *Bot) runbookLines() []Line {
	var lines []Line
	for _, rb := range b.catalog.All() {
		lines = append(lines, Line{Text: rb.Name + ": " + titleOf(rb) + ". " + b.usageOf(rb)})
	}
	return lines
}

// explain describes a runbook from its definition; given params, it also
// lists every command and request a run would make, running nothing.
func (b *Bot) explain(ctx context.Context, words []string) Message {
	if len(words) == 0 {
		return errorReply("Which runbook? `"+b.cfg.Command+" explain RUNBOOK`.", b.runbookList())
	}
	rb, err := b.disp.Runbook(words[0])
	if err != nil {
		return errorReply(err.Error()+".", b.runbookList())
	}
	m := Message{Title: titleOf(rb) + " (" + rb.Name + ")"}
	m.Sections = append(m.Sections, Section{Text: strings.TrimSpace(rb.Doc), Lines: []Line{{Text: "Usage: " + b.usageOf(rb)}}})
	var params []Line
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
		params = append(params, Line{Text: t})
	}
	if len(params) > 0 {
		m.Sections = append(m.Sections, Section{Heading: "Params", Lines: params})
	}
	var steps []Line
	for _, s := range rb.Steps {
		t := fmt.Sprintf("%s: %s on %s", s.ID, s.Check, strings.Join(s.Targets, ", "))
		if len(s.Needs) > 0 {
			t += " after " + strings.Join(s.Needs, ", ")
		}
		steps = append(steps, Line{Text: t})
	}
	m.Sections = append(m.Sections, Section{Heading: "Steps", Lines: steps})
	var findings []Line
	for _, f := range rb.Findings {
		findings = append(findings, Line{Status: dispatch.SeverityStatus(f.Severity), Text: f.ID + " when " + f.When})
	}
	for _, d := range rb.Diagnoses {
		t := "diagnosis " + d.ID + " when " + d.When
		if d.Remediate != "" {
			t += ", proposes " + d.Remediate
		}
		findings = append(findings, Line{Status: dispatch.SeverityStatus(d.Severity), Text: t})
	}
	if len(findings) > 0 {
		m.Sections = append(m.Sections, Section{Heading: "Findings and diagnoses", Lines: findings})
	}
	for _, r := range rb.Remediations {
		s := Section{Heading: "Remediation " + r.Name}
		for _, a := range r.Actions {
			s.Lines = append(s.Lines, Line{Text: a.Action + " on " + strings.Join(a.Targets, ", ")})
		}
		t := "approval by " + strings.Join(r.Approval.Approvers, ", ")
		if r.Approval.TwoPerson {
			t += ", two-person rule"
		}
		s.Lines = append(s.Lines, Line{Text: t})
		m.Sections = append(m.Sections, s)
	}
	if len(words) > 1 {
		m.Sections = append(m.Sections, b.planned(ctx, rb, words[1:]))
	}
	return m
}

// planned lists what a run with the given params would do on each target.
func (b *Bot) planned(ctx context.Context, rb *runbooks.Runbook, words []string) Section {
	s := Section{Heading: "A run with these params would"}
	params, err := bindArgs(rb, words)
	if err != nil {
		s.Status, s.Text = StatusError, err.Error()
		return s
	}
	p, err := b.engine.Prepare(ctx, rb, params)
	if err != nil {
		s.Status, s.Text = StatusError, err.Error()
		return s
	}
	var code []string
	for _, ps := range b.engine.Explain(p) {
		code = append(code, fmt.Sprintf("%s (%s) on %s, timeout %s", ps.Step, ps.Check, ps.Target, ps.Timeout))
		for _, l := range ps.Lines {
			code = append(code, "    "+l)
		}
	}
	s.Code = strings.Join(code, "\n")
	return s
}
