package runbooks

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// stepRef is a reference from an expression to a step, or to one target of
// a step when Role is set.
type stepRef struct {
	Step string
	Role string
}

// exprNames are the names an expression refers to under a root variable.
type exprNames struct {
	steps    []stepRef
	findings []string
	params   []string
	// pos of each name, as expression byte offsets, for error positions
	at map[string]int
	// chains are the maximal constant member paths, e.g. steps.chat.bytes,
	// checked against the environment's shape for did-you-mean errors.
	chains []chain
	// bareGets are the offsets of get(steps..., KEY) calls whose nil (for
	// a missing key) nothing catches; see bareGets.
	bareGets []int
	// reads are the constant paths the expression reads under steps and
	// params, get(steps.X.values, "K") as steps.X.values.K: what a report
	// quotes when the expression fails at run time.
	reads [][]string
	// converted are the paths read inside int(), float() or duration():
	// text that must parse as a number, which an empty value does not.
	converted [][]string
}

type chain struct {
	idents []string
	at     int
}

// scanNames parses src (without type checking) and collects references to
// steps.X[.role], findings.X and params.X.
func scanNames(src string) (*exprNames, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, err
	}
	names := &exprNames{at: map[string]int{}}
	var members []*ast.MemberNode
	ast.Walk(&tree.Node, visitor(func(n *ast.Node) {
		if m, ok := (*n).(*ast.MemberNode); ok {
			members = append(members, m)
		}
	}))
	inner := map[*ast.MemberNode]bool{}
	for _, m := range members {
		if in, ok := m.Node.(*ast.MemberNode); ok {
			if root, prop := memberOf(in); root == "steps" && prop != "" {
				if role := propName(m); role != "" {
					names.steps = append(names.steps, stepRef{Step: prop, Role: role})
					inner[in] = true
				}
			}
		}
	}
	names.bareGets = bareGets(&tree.Node)
	for _, m := range members {
		if idents, ok := chainOf(m); ok && !inner2(members, m) {
			names.chains = append(names.chains, chain{idents: idents, at: m.Location().From})
		}
	}
	names.reads = readPaths(&tree.Node)
	ast.Walk(&tree.Node, visitor(func(n *ast.Node) {
		if b, ok := (*n).(*ast.BuiltinNode); ok && (b.Name == "int" || b.Name == "float" || b.Name == "duration") {
			for i := range b.Arguments {
				names.converted = append(names.converted, readPaths(&b.Arguments[i])...)
			}
		}
	}))
	for _, m := range members {
		root, prop := memberOf(m)
		if prop == "" {
			continue
		}
		names.at[root+"."+prop] = m.Location().From
		switch root {
		case "steps":
			if !inner[m] {
				names.steps = append(names.steps, stepRef{Step: prop})
			}
		case "findings":
			names.findings = append(names.findings, prop)
		case "params":
			names.params = append(names.params, prop)
		}
	}
	return names, nil
}

// chainOf returns [steps chat bytes] for `steps.chat.bytes`.
func chainOf(m *ast.MemberNode) ([]string, bool) {
	prop := propName(m)
	if prop == "" {
		return nil, false
	}
	switch n := m.Node.(type) {
	case *ast.IdentifierNode:
		return []string{n.Value, prop}, true
	case *ast.MemberNode:
		if head, ok := chainOf(n); ok {
			return append(head, prop), true
		}
	}
	return nil, false
}

// inner2 reports whether m is the object of another member access, so
// only the longest chain is checked.
func inner2(all []*ast.MemberNode, m *ast.MemberNode) bool {
	for _, o := range all {
		if o.Node == ast.Node(m) && propName(o) != "" {
			return true
		}
	}
	return false
}

// readPaths returns the constant paths under steps and params that the
// tree reads, longest only, each once; get(PATH, "K") reads PATH.K.
func readPaths(tree *ast.Node) [][]string {
	var members []*ast.MemberNode
	var out [][]string
	seen := map[string]bool{}
	add := func(idents []string) {
		if (idents[0] == "steps" || idents[0] == "params") && !seen[strings.Join(idents, "\x00")] {
			seen[strings.Join(idents, "\x00")] = true
			out = append(out, idents)
		}
	}
	ast.Walk(tree, visitor(func(n *ast.Node) {
		switch n := (*n).(type) {
		case *ast.MemberNode:
			members = append(members, n)
		case *ast.BuiltinNode:
			if n.Name != "get" || len(n.Arguments) != 2 {
				return
			}
			m, ok := n.Arguments[0].(*ast.MemberNode)
			key, isStr := n.Arguments[1].(*ast.StringNode)
			if !ok || !isStr {
				return
			}
			if idents, ok := chainOf(m); ok {
				add(append(slices.Clone(idents), key.Value))
			}
		}
	}))
	for _, m := range members {
		if idents, ok := chainOf(m); ok && !inner2(members, m) {
			add(idents)
		}
	}
	// steps.X.values, the map get() reads, says less than the key read.
	return slices.DeleteFunc(out, func(p []string) bool {
		return slices.ContainsFunc(out, func(q []string) bool { return len(q) > len(p) && slices.Equal(q[:len(p)], p) })
	})
}

// describeReads quotes what the paths read in env, for a report: e.g.
// steps.disk.values["pct"] = "".
func describeReads(env reflect.Value, paths [][]string) string {
	var parts []string
	for _, p := range paths {
		name, v, ok := readPath(env, p)
		if !ok {
			continue
		}
		if v.IsValid() && v.CanInterface() {
			parts = append(parts, fmt.Sprintf("%s = %s", name, quoteValue(v.Interface())))
		} else {
			parts = append(parts, name+" is missing")
		}
	}
	return strings.Join(parts, ", ")
}

// readPath follows idents through env's struct fields (by expression
// name) and map keys; the value is invalid for a missing map key.
func readPath(env reflect.Value, idents []string) (string, reflect.Value, bool) {
	name, v := idents[0], env
	for i, id := range idents {
		for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
			if v.IsNil() {
				return name, reflect.Value{}, true
			}
			v = v.Elem()
		}
		if !v.IsValid() {
			return name, v, true
		}
		switch v.Kind() {
		case reflect.Struct:
			found := false
			for j := range v.NumField() {
				if exprName(v.Type().Field(j)) == id {
					v, found = v.Field(j), true
					break
				}
			}
			if !found {
				return "", reflect.Value{}, false
			}
			if i > 0 {
				name += "." + id
			}
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return "", reflect.Value{}, false
			}
			v = v.MapIndex(reflect.ValueOf(id).Convert(v.Type().Key()))
			name += fmt.Sprintf("[%q]", id)
		default:
			return "", reflect.Value{}, false
		}
	}
	return name, v, true
}

func quoteValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

type visitor func(*ast.Node)

func (v visitor) Visit(n *ast.Node) { v(n) }

// memberOf returns ("steps", "chat") for the node `steps.chat`.
func memberOf(m *ast.MemberNode) (root, prop string) {
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return "", ""
	}
	return id.Value, propName(m)
}

func propName(m *ast.MemberNode) string {
	if s, ok := m.Property.(*ast.StringNode); ok {
		return s.Value
	}
	return ""
}

// compileBool type-checks src against env and returns a program yielding a
// bool.
func compileBool(src string, env any) (*vm.Program, error) {
	return expr.Compile(src, expr.Env(env), expr.AsBool(), expr.Timezone("UTC"))
}

var structDumpRE = regexp.MustCompile(`struct \{[^}]*\}`)

// exprError turns an expr error into a message and a column offset into
// the expression.
func exprError(err error) (string, int) {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := fe.Message
		msg = structDumpRE.ReplaceAllString(msg, "this")
		return msg, fe.Column
	}
	return err.Error(), 0
}

// newEnvValue returns a zero environment of the runbook's types.
func (e *envTypes) zero() any {
	return reflect.New(e.root).Elem().Interface()
}

// evalBool runs a compiled condition.
func evalBool(p *vm.Program, env any) (bool, error) {
	out, err := expr.Run(p, env)
	if err != nil {
		return false, fmt.Errorf("evaluate expression: %w", err)
	}
	b, _ := out.(bool)
	return b, nil
}

// toTemplateData turns an environment struct into nested maps keyed by
// expression names, so templates say {{ .steps.chat.bytes }} exactly as
// expressions say steps.chat.bytes.
func toTemplateData(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			return t
		}
		m := map[string]any{}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name := exprName(f)
			if name == "" {
				if !f.IsExported() {
					continue
				}
				name = f.Name
			}
			m[name] = toTemplateData(v.Field(i))
		}
		return m
	case reflect.Slice:
		if !hasStructs(v.Type().Elem()) {
			return v.Interface()
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = toTemplateData(v.Index(i))
		}
		return out
	case reflect.Map:
		// Maps of structs (e.g. metrics by name) are converted too, so a
		// template reads (index .m "x").last as an expression reads
		// m["x"].last.
		if v.Type().Key().Kind() != reflect.String || !hasStructs(v.Type().Elem()) {
			return v.Interface()
		}
		m := make(map[string]any, v.Len())
		for _, k := range v.MapKeys() {
			m[k.String()] = toTemplateData(v.MapIndex(k))
		}
		return m
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return toTemplateData(v.Elem())
	}
	return v.Interface()
}

func hasStructs(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		return t != reflect.TypeFor[time.Time]()
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return hasStructs(t.Elem())
	}
	return false
}

// lineCol maps a column inside a one-line expression to a file position.
func exprPos(base, col int, quoted bool) int {
	if quoted {
		base++
	}
	return base + col
}

func oneLine(s string) bool { return !strings.Contains(s, "\n") }
