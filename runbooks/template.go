package runbooks

import (
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/internal/yamlnode"
)

// Template is a text/template from a runbook. In a shell context every value
// it inserts is shell-quoted, the way html/template escapes by context; an
// author opts out per value with `| raw`, and lint warns about each use.
type Template struct {
	Source  string
	Shell   bool
	UsesRaw bool
	Pos     yamlnode.Pos
	t       *template.Template
}

// rawText marks a value an author chose to insert unquoted.
type rawText string

var funcs = template.FuncMap{
	"raw":   func(v any) rawText { return rawText(fmt.Sprint(v)) },
	"quote": func(v any) string { return shell.Quote(fmt.Sprint(v)) },
	"join":  func(sep string, v []string) string { return strings.Join(v, sep) },
	"round": func(d time.Duration) time.Duration { return roundDuration(d) },
	"default": func(def, v any) any {
		if v == nil || fmt.Sprint(v) == "" {
			return def
		}
		return v
	},
	"shq": func(v any) string {
		if r, ok := v.(rawText); ok {
			return string(r)
		}
		return shell.Quote(fmt.Sprint(v))
	},
}

// hasTemplate reports whether s contains template actions.
func hasTemplate(s string) bool { return strings.Contains(s, "{{") }

// ParseTemplate parses src. With shell set, it rewrites every output action
// to end in the shell-quoting function.
//
// Summaries (shellCtx false) print an absent map key as empty; commands
// (shellCtx true) refuse to render, since a command with a hole in it may
// do something else than the author meant.
func ParseTemplate(name, src string, shellCtx bool) (*Template, error) {
	missing := "missingkey=zero"
	if shellCtx {
		missing = "missingkey=error"
	}
	t, err := template.New(name).Funcs(funcs).Option(missing).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("template: %s", cleanTemplateErr(err))
	}
	out := &Template{Source: src, Shell: shellCtx, t: t}
	if t.Tree != nil && t.Root != nil {
		out.UsesRaw = usesRaw(t.Root)
		if shellCtx {
			escapeList(t.Root)
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
	return b.String(), nil
}

// escapeList appends the quoting function to every pipeline that prints.
// Conditions of if/range/with are left alone: they do not print.
func escapeList(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if len(n.Pipe.Decl) > 0 {
				continue
			}
			n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{
				NodeType: parse.NodeCommand,
				Args:     []parse.Node{parse.NewIdentifier("shq").SetTree(nil).SetPos(n.Pos)},
			})
		case *parse.IfNode:
			escapeList(n.List)
			escapeList(n.ElseList)
		case *parse.RangeNode:
			escapeList(n.List)
			escapeList(n.ElseList)
		case *parse.WithNode:
			escapeList(n.List)
			escapeList(n.ElseList)
		}
	}
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
