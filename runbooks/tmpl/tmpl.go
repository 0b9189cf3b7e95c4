// Package tmpl is the runbooks' templates: text/template with runbot's
// functions, every value escaped for where it lands (package escape), the
// result checked against its context, and what the loader and lint need
// to know of a template: the fields it reads, the functions it calls and
// what lint warns about.
package tmpl

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks/escape"
)

// Template is a text/template from a runbook. Every value it inserts is
// escaped for where it lands, the way html/template escapes by context:
// shell-quoted in a command, JSON-escaped in a JSON body, escaped as a path
// segment or query component in a URL, refused in a header when it holds a
// line break. An author opts out per value with `| raw`, and lint warns
// about each use.
type Template struct {
	Source string
	Shell  bool
	// Escape is the context the template's values are escaped for.
	Escape  argspec.Escape
	UsesRaw bool
	Pos     yamlnode.Pos
	t       *template.Template
	// json says the template is a JSON document, so its result must parse.
	json bool
	// warnings are what lint should point out, by offset in Source.
	warnings []escape.Problem
}

var funcs = template.FuncMap{
	"raw":   func(v any) escape.Raw { return escape.Raw(fmt.Sprint(v)) },
	"quote": func(v any) string { return shell.Quote(fmt.Sprint(v)) },
	"join":  func(sep string, v []string) string { return strings.Join(v, sep) },
	"round": func(d time.Duration) time.Duration { return roundDuration(d) },
	// ago says how long before now a time was ("22.1s ago", never
	// negative): a summary counts ages from the run's now, as the
	// evidence does, so a line it quotes has the age the evidence shows.
	"ago": func(now, t time.Time) string { return step.AgeText(now, t) },
	// seconds renders a duration as whole seconds, rounded to the nearest
	// one, because a duration prints as Go writes it (1m30s) and commands
	// such as sleep or timeout want a plain number.
	"seconds": seconds,
	// sub is the time between two durations measured from one start, e.g.
	// a stream's total less its first byte.
	"sub": func(a, b time.Duration) time.Duration { return a - b },
	"default": func(def, v any) any {
		if v == nil || fmt.Sprint(v) == "" {
			return def
		}
		return v
	},
	"shq": func(v any) string {
		if r, ok := v.(escape.Raw); ok {
			return string(r)
		}
		return shell.Quote(fmt.Sprint(v))
	},
}

// Has reports whether s contains template actions.
func Has(s string) bool { return strings.Contains(s, "{{") }

// Parse parses src. With shell set, it rewrites every output action
// to end in the shell-quoting function.
//
// Summaries (shellCtx false) print an absent map key as empty; commands
// (shellCtx true) refuse to render, since a command with a hole in it may
// do something else than the author meant.
func Parse(name, src string, shellCtx bool) (*Template, error) {
	esc := argspec.EscapeNone
	if shellCtx {
		esc = argspec.EscapeShell
	}
	return ParseFor(name, src, esc)
}

// ParseFor parses src for an argument whose values land in context
// esc, and rewrites every output action to end in the escaper for where its
// value lands. A template whose places cannot be told apart statically
// (see package escape) is an error, with the offset of the action in question.
func ParseFor(name, src string, esc argspec.Escape) (*Template, error) {
	missing := "missingkey=zero"
	if esc == argspec.EscapeShell {
		missing = "missingkey=error"
	}
	t, err := template.New(name).Funcs(funcs).Funcs(escape.Funcs).Option(missing).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("template: %s", cleanTemplateErr(err))
	}
	out := &Template{Source: src, Shell: esc == argspec.EscapeShell, Escape: esc, t: t}
	if t.Tree == nil || t.Root == nil {
		return out, nil
	}
	out.UsesRaw = usesRaw(t.Root)
	st := escape.Initial(esc, src)
	if escape.IsJSON(st) {
		out.json = true
		escape.QuoteWarnings(src, t.Root, func(off int, msg string) {
			out.warnings = append(out.warnings, escape.Problem{Offset: off, Msg: msg})
		})
	} else if esc == argspec.EscapeJSON && Has(src) && !escape.IsWholeValue(t) {
		out.warnings = append(out.warnings, escape.Problem{Offset: 0,
			Msg: "the body does not start with { or [, so it is not escaped as JSON: its template values are inserted as they are"})
	}
	if st != nil {
		if err := escape.Rewrite(t, src, st); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Execute renders the template.
func (t *Template) Execute(data any) (string, error) {
	var b strings.Builder
	if err := t.t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render %q: %s", t.Source, cleanTemplateErr(err))
	}
	if err := t.checkResult(b.String()); err != nil {
		return "", fmt.Errorf("render %q: %w", t.Source, err)
	}
	return b.String(), nil
}

// Calls reports whether the template calls the function name anywhere,
// e.g. whether an alert param gives a default of its own.
func (t *Template) Calls(name string) bool {
	found := false
	t.walk(walkOptions{}, func(n parse.Node) bool {
		if id, ok := n.(*parse.IdentifierNode); ok && id.Ident == name {
			found = true
		}
		return !found
	})
	return found
}

// Fields returns the field chains the template reads, e.g. [labels
// service] for {{ .labels.service }}, each once, in order: the operands of
// a command before those of the pipelines nested in it.
func (t *Template) Fields() [][]string {
	var out [][]string
	seen := map[string]bool{}
	t.walk(walkOptions{nestedLast: true}, func(n parse.Node) bool {
		if f, ok := n.(*parse.FieldNode); ok && !seen[strings.Join(f.Ident, ".")] {
			seen[strings.Join(f.Ident, ".")] = true
			out = append(out, f.Ident)
		}
		return true
	})
	return out
}

// Warnings are what lint should point out in the template, by offset in
// Source: what escaping found doubtful, such as a JSON body that is not
// escaped as JSON.
func (t *Template) Warnings() []escape.Problem { return t.warnings }

// RootFields calls check with each chain of names the template reads from
// the root of its data (.a.b, and $.a.b) in its actions, in the conditions
// of if, range and with and in the branches of if, and returns the first
// error check returns. Names under range and with are left out, since the
// dot moves there.
func (t *Template) RootFields(check func(chain []string) error) error {
	var err error
	t.walk(walkOptions{rootOnly: true}, func(n parse.Node) bool {
		switch n := n.(type) {
		case *parse.FieldNode:
			err = check(n.Ident)
		case *parse.VariableNode:
			if len(n.Ident) > 1 && n.Ident[0] == "$" {
				err = check(n.Ident[1:])
			}
		}
		return err == nil
	})
	return err
}

// AllFields returns every field chain the template names, in order and
// with repeats: in actions, in every branch, under range and with (where
// the dot has moved) and inside parenthesised chains ((.a).b). The
// verdict reads it to know which steps a summary quotes.
func (t *Template) AllFields() [][]string {
	var out [][]string
	t.walk(walkOptions{chains: true}, func(n parse.Node) bool {
		if f, ok := n.(*parse.FieldNode); ok {
			out = append(out, f.Ident)
		}
		return true
	})
	return out
}

// walkOptions say how far a walk of the template goes. Every walk visits
// the pipelines of actions and of the conditions of if, range and with,
// the pipelines nested in them, and both branches of if; the options are
// where the callers of walk differ.
type walkOptions struct {
	// rootOnly leaves out both branches of range and with, where the dot
	// is no longer the data's root.
	rootOnly bool
	// chains goes into parenthesised chains, (.a).b; without it a chain
	// is not visited at all.
	chains bool
	// nestedLast visits a command's operands before the pipelines nested
	// in them (the order Fields has always listed in), instead of each
	// nested pipeline in its place.
	nestedLast bool
}

// walk calls visit with each operand of each command of the template (a
// field, a variable, an identifier, a constant; never a pipeline, which it
// goes into, nor a chain) in order, as o says, until visit returns false.
// It is the one walk of the parse tree behind Calls, Fields, RootFields
// and AllFields.
func (t *Template) walk(o walkOptions, visit func(parse.Node) bool) {
	if t == nil || t.t == nil || t.t.Tree == nil {
		return
	}
	stopped := false
	var pipe func(p *parse.PipeNode)
	var operand func(n parse.Node)
	operand = func(n parse.Node) {
		if stopped {
			return
		}
		switch n := n.(type) {
		case *parse.PipeNode:
			if !o.nestedLast {
				pipe(n)
			}
		case *parse.ChainNode:
			if o.chains {
				operand(n.Node)
			}
		default:
			stopped = !visit(n)
		}
	}
	pipe = func(p *parse.PipeNode) {
		if p == nil {
			return
		}
		for _, c := range p.Cmds {
			for _, a := range c.Args {
				operand(a)
			}
			if !o.nestedLast {
				continue
			}
			for _, a := range c.Args {
				if sub, ok := a.(*parse.PipeNode); ok && !stopped {
					pipe(sub)
				}
			}
		}
	}
	var list func(l *parse.ListNode)
	list = func(l *parse.ListNode) {
		if l == nil {
			return
		}
		for _, n := range l.Nodes {
			switch n := n.(type) {
			case *parse.ActionNode:
				pipe(n.Pipe)
			case *parse.IfNode:
				pipe(n.Pipe)
				list(n.List)
				list(n.ElseList)
			case *parse.RangeNode:
				pipe(n.Pipe)
				if !o.rootOnly {
					list(n.List)
					list(n.ElseList)
				}
			case *parse.WithNode:
				pipe(n.Pipe)
				if !o.rootOnly {
					list(n.List)
					list(n.ElseList)
				}
			}
		}
	}
	list(t.t.Root)
}

func usesRaw(l *parse.ListNode) bool {
	if l == nil {
		return false
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			for _, c := range n.Pipe.Cmds {
				if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "raw" {
					return true
				}
			}
		case *parse.IfNode:
			if usesRaw(n.List) || usesRaw(n.ElseList) {
				return true
			}
		case *parse.RangeNode:
			if usesRaw(n.List) || usesRaw(n.ElseList) {
				return true
			}
		case *parse.WithNode:
			if usesRaw(n.List) || usesRaw(n.ElseList) {
				return true
			}
		}
	}
	return false
}

func cleanTemplateErr(err error) string {
	s := err.Error()
	// "template: name:1:5: executing ..." -> keep what follows the position.
	if i := strings.Index(s, ": executing "); i >= 0 {
		s = s[i+len(": executing "):]
		if j := strings.Index(s, "> "); j >= 0 {
			s = s[j+2:]
		}
	}
	return strings.TrimPrefix(s, "template: ")
}

// seconds is the template function: a duration param is a time.Duration,
// and a string (an alert label, a value from a map) is parsed as one.
func seconds(v any) (int64, error) {
	switch d := v.(type) {
	case time.Duration:
		return int64(d.Round(time.Second) / time.Second), nil
	case string:
		p, err := time.ParseDuration(d)
		if err != nil {
			return 0, fmt.Errorf("seconds: %w", err)
		}
		return int64(p.Round(time.Second) / time.Second), nil
	}
	return 0, fmt.Errorf("seconds: want a duration, got %T", v)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	default:
		return d.Round(time.Millisecond)
	}
}

// checkResult checks what a template rendered against its context: a JSON
// document must parse, a header value must stay on one line. It catches
// what `raw` and the template's own text could break.
func (t *Template) checkResult(out string) error {
	switch {
	case t.json:
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			return fmt.Errorf("the result is not valid JSON (%w): %s", err, out)
		}
	case t.Escape == argspec.EscapeHeader:
		return escape.CheckHeader(out)
	}
	return nil
}

// RawWarning is lint's warning about `| raw` in a template of this
// context.
func (t *Template) RawWarning() string {
	switch t.Escape {
	case argspec.EscapeShell:
		return "`raw` inserts text unquoted into a command; make sure it can never come from a param, an alert or chat"
	case argspec.EscapeJSON:
		return "`raw` inserts text unescaped into JSON; make sure it can never come from a param, an alert or chat"
	case argspec.EscapeURL, argspec.EscapeURLPath, argspec.EscapeURLQuery:
		return "`raw` inserts text unescaped into a URL; make sure it can never come from a param, an alert or chat"
	case argspec.EscapeHeader:
		return "`raw` inserts text unchecked into a header; make sure it can never come from a param, an alert or chat"
	}
	return "`raw` changes nothing here: this argument's values are not escaped"
}
