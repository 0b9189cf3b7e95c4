// Package yamlnode decodes YAML through its node tree, so that every problem
// in a runbook, inventory or config file is reported as file:line:col, and
// all of them in one pass rather than one per run of the linter.
package yamlnode

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Severity grades a problem. Errors make a file unusable; warnings do not.
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Problem is one thing wrong with a file, at a position.
type Problem struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Severity Severity `json:"severity"`
	Msg      string   `json:"message"`
}

// String renders the problem as `file:line:col: message`, with a
// "warning: " prefix for warnings, the form editors and CI logs link.
func (p Problem) String() string {
	msg := p.Msg
	if p.Severity == Warning {
		msg = "warning: " + msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, msg)
}

// Problems is every problem found in one or more files.
type Problems []Problem

// Errors returns only the problems that make a file unusable.
func (ps Problems) Errors() Problems {
	return slices.DeleteFunc(slices.Clone(ps), func(p Problem) bool { return p.Severity != Error })
}

// Sort orders problems by file and position, so output is stable.
func (ps Problems) Sort() {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// Err returns the problems as an error when any is an error, else nil.
func (ps Problems) Err() error {
	if len(ps.Errors()) == 0 {
		return nil
	}
	return &ProblemsError{Problems: ps}
}

// ProblemsError is the error form of a problem list. Its message lists every
// problem, one per line.
type ProblemsError struct{ Problems Problems }

func (e *ProblemsError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Pos is a position in a file.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// PosOf returns a node's position.
func PosOf(n *yaml.Node) Pos {
	if n == nil {
		return Pos{1, 1}
	}
	return Pos{n.Line, n.Column}
}
