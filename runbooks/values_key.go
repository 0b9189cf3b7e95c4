package runbooks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"

	"github.com/runbot/runbot/internal/yamlnode"
)

// checkValuesKey refuses a read of a command step's values under a name
// its extract patterns do not declare (steps.ID.values["NAME"], or
// steps.ID.ROLE.values.NAME): values is a map, so the type check lets any
// name through, and a misspelt one would read "" on every run, quietly
// turning a finding false or inconclusive.
func checkValuesKey(rb *Runbook, idents []string) error {
	if len(idents) < 4 || idents[0] != "steps" {
		return nil
	}
	s := rb.StepByID(idents[1])
	if s == nil {
		return nil
	}
	i := 2
	if len(s.Targets) > 1 && slices.Contains(s.Targets, idents[2]) {
		i = 3
	}
	if len(idents) <= i+1 || idents[i] != "values" {
		return nil
	}
	keys, known := extractKeys(s)
	name := idents[i+1]
	if !known || slices.Contains(keys, name) {
		return nil
	}
	declared := "none"
	if len(keys) > 0 {
		declared = strings.Join(keys, ", ")
	}
	return fmt.Errorf("step %s extracts no value %q (extract: %s)%s", s.ID, name, declared, yamlnode.DidYouMean(name, keys))
}

// extractKeys returns the names a command step's extract patterns set, and
// whether they are known at load time (the step runs the command check,
// and its extract is a literal map).
func extractKeys(s *Step) ([]string, bool) {
	if s.Check != "command" {
		return nil, false
	}
	av := s.With["extract"]
	if av == nil {
		return nil, true
	}
	m, ok := av.Raw.(map[string]any)
	if !ok {
		return nil, false
	}
	return slices.Sorted(maps.Keys(m)), true
}

// bareGets returns the offsets of the get(steps..., KEY) calls in tree
// whose result is used as it is. get on a step's map (a command's values,
// a scrape's metrics) is typed as the map's element, but yields nil for a
// missing key, and a nil compared with a string or converted fails at run
// time: the finding cannot be evaluated exactly when the value it looks
// for is absent. Caught, the nil is harmless: as the left of ?? (the
// documented get(...) ?? DEFAULT) or compared with nil.
func bareGets(tree *ast.Node) []int {
	caught := map[ast.Node]bool{}
	var gets []*ast.BuiltinNode
	ast.Walk(tree, visitor(func(n *ast.Node) {
		switch n := (*n).(type) {
		case *ast.BinaryNode:
			switch n.Operator {
			case "??":
				caught[n.Left] = true
			case "==", "!=":
				if _, ok := n.Right.(*ast.NilNode); ok {
					caught[n.Left] = true
				}
				if _, ok := n.Left.(*ast.NilNode); ok {
					caught[n.Right] = true
				}
			}
		case *ast.BuiltinNode:
			if n.Name == "get" && len(n.Arguments) == 2 && readsSteps(n.Arguments[0]) {
				gets = append(gets, n)
			}
		}
	}))
	var at []int
	for _, g := range gets {
		if !caught[g] {
			at = append(at, g.Location().From)
		}
	}
	return at
}

// readsSteps reports whether n is a member path under steps.
func readsSteps(n ast.Node) bool {
	m, ok := n.(*ast.MemberNode)
	if !ok {
		return false
	}
	idents, ok := chainOf(m)
	return ok && idents[0] == "steps"
}
