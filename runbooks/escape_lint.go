package runbooks

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks/escape"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// templateErr reports a problem parsing or escaping the template at path
// inside argument node v. An escaping problem is reported at the action it
// is about when the scalar's position in the file can be told.
func (l *loader) templateErr(v *yaml.Node, path, src, what string, err error) {
	var tp *escape.Problem
	if !errors.As(err, &tp) {
		l.d.Errorf(v, "%s: %v", what, err)
		return
	}
	pos, msg := l.problemPos(v, path, src, tp)
	l.d.ErrorAt(pos, "%s: %s", what, msg)
}

// templateWarnings reports what lint warns about in a parsed template:
// `| raw`, and what escaping found doubtful.
func (l *loader) templateWarnings(v *yaml.Node, path, what string, t *tmpl.Template) {
	if t.UsesRaw {
		at := scalarAt(v, path)
		if at == nil {
			at = v
		}
		l.d.Warnf(at, "%s: %s", what, t.RawWarning())
	}
	for _, w := range t.Warnings() {
		pos, msg := l.problemPos(v, path, t.Source, &w)
		l.d.Problems = append(l.d.Problems, yamlnode.Problem{File: l.d.File, Line: pos.Line, Col: pos.Col,
			Severity: yamlnode.Warning, Msg: what + ": " + msg})
	}
}

// problemPos finds the file position of a problem at an offset of the
// template at path inside argument node v. Where it cannot be told exactly
// (a block scalar), it is the scalar's position, and the message says where
// in the template.
func (l *loader) problemPos(v *yaml.Node, path, src string, tp *escape.Problem) (yamlnode.Pos, string) {
	n := scalarAt(v, path)
	if n == nil {
		n = v
	}
	if pos, ok := offsetPos(n, src, tp.Offset); ok {
		return pos, tp.Msg
	}
	line, col := lineCol(src, tp.Offset)
	return yamlnode.PosOf(n), fmt.Sprintf("%s (at line %d, column %d of the template)", tp.Msg, line, col)
}

// scalarAt returns the node at path (as collectTemplates spells it: .key,
// [i]) below n, or nil.
func scalarAt(n *yaml.Node, path string) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || path == "" {
		return n
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if rest, ok := strings.CutPrefix(path, "."+n.Content[i].Value); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
				if found := scalarAt(n.Content[i+1], rest); found != nil {
					return found
				}
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if rest, ok := strings.CutPrefix(path, fmt.Sprintf("[%d]", i)); ok {
				return scalarAt(c, rest)
			}
		}
	}
	return nil
}

// offsetPos maps a byte offset in the value of scalar n to a file position.
// Only a one-line plain or quoted scalar maps exactly; in a quoted one, the
// quote before the value and each escaped quote or backslash count too.
func offsetPos(n *yaml.Node, src string, off int) (yamlnode.Pos, bool) {
	p := yamlnode.PosOf(n)
	if n.Kind != yaml.ScalarNode || n.Value != src || strings.Contains(src, "\n") || off > len(src) {
		return p, false
	}
	before := src[:off]
	col := utf8.RuneCountInString(before)
	switch n.Style {
	case 0:
	case yaml.SingleQuotedStyle:
		col += 1 + strings.Count(before, "'")
	case yaml.DoubleQuotedStyle:
		col += 1 + strings.Count(before, `"`) + strings.Count(before, `\`)
	default:
		return p, false
	}
	p.Col += col
	return p, true
}

// lineCol turns a byte offset in s into a 1-based line and column.
func lineCol(s string, off int) (line, col int) {
	before := s[:min(off, len(s))]
	line = 1 + strings.Count(before, "\n")
	if i := strings.LastIndex(before, "\n"); i >= 0 {
		before = before[i+1:]
	}
	return line, 1 + utf8.RuneCountInString(before)
}
