package runbooks

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/template/parse"
	"time"

	"github.com/runbot/runbot/internal/yamlnode"
)

// shape describes what names a template may read below a point of its data:
// a closed set of fields, an open map (any key), or a leaf.
type shape struct {
	fields map[string]*shape
	open   bool
	// typ is a leaf's Go type, whose methods templates may call
	// (e.g. .last_progress.UTC).
	typ reflect.Type
}

var leaf = &shape{}

// shapeOfType derives a shape from an expression environment type.
func shapeOfType(t reflect.Type) *shape {
	switch {
	case t == reflect.TypeFor[time.Time]():
		return &shape{typ: t}
	case t.Kind() == reflect.Struct:
		s := &shape{fields: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			if name := exprName(f); name != "" {
				s.fields[name] = shapeOfType(f.Type)
			}
		}
		return s
	case t.Kind() == reflect.Map:
		return &shape{open: true}
	case t.Kind() == reflect.Pointer:
		return shapeOfType(t.Elem())
	}
	return &shape{typ: t}
}

// shapeOfValue derives a shape from template data made of maps.
func shapeOfValue(v any) *shape {
	switch x := v.(type) {
	case map[string]any:
		s := &shape{fields: map[string]*shape{}}
		for k, e := range x {
			s.fields[k] = shapeOfValue(e)
		}
		return s
	case map[string]string:
		return &shape{open: true}
	}
	return leaf
}

// checkFields reports the first name a template reads that its data cannot
// have, e.g. `.steps.chat.byts`. Names under range and with are not
// checked, since the dot moves there.
func checkFields(t *Template, root *shape) error {
	if t == nil || t.t.Tree == nil {
		return nil
	}
	var err error
	var walkList func(l *parse.ListNode)
	walkPipe := func(p *parse.PipeNode) {
		if p == nil || err != nil {
			return
		}
		for _, c := range p.Cmds {
			for _, a := range c.Args {
				if err == nil {
					err = checkArg(a, root)
				}
			}
		}
	}
	walkList = func(l *parse.ListNode) {
		if l == nil {
			return
		}
		for _, n := range l.Nodes {
			switch n := n.(type) {
			case *parse.ActionNode:
				walkPipe(n.Pipe)
			case *parse.IfNode:
				walkPipe(n.Pipe)
				walkList(n.List)
				walkList(n.ElseList)
			case *parse.RangeNode:
				walkPipe(n.Pipe)
			case *parse.WithNode:
				walkPipe(n.Pipe)
			}
		}
	}
	walkList(t.t.Root)
	return err
}

func checkArg(a parse.Node, root *shape) error {
	switch a := a.(type) {
	case *parse.FieldNode:
		return checkChain(a.Ident, root, ".")
	case *parse.VariableNode:
		if len(a.Ident) > 1 && a.Ident[0] == "$" {
			return checkChain(a.Ident[1:], root, ".")
		}
	case *parse.PipeNode:
		for _, c := range a.Cmds {
			for _, x := range c.Args {
				if err := checkArg(x, root); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkChain follows idents through s. prefix is "." for templates and ""
// for expressions, so messages name paths the way the author wrote them.
func checkChain(idents []string, s *shape, prefix ...string) error {
	path := ""
	for _, id := range idents {
		if s.open {
			return nil
		}
		if s.fields == nil {
			if s.typ != nil {
				if m, ok := s.typ.MethodByName(id); ok {
					// A method call ends what can be checked statically.
					_ = m
					return nil
				}
			}
			return fmt.Errorf("%s has no field %q", showPath(path, prefix), id)
		}
		next, ok := s.fields[id]
		if !ok {
			names := slices.Sorted(maps.Keys(s.fields))
			return fmt.Errorf("%s has no field %q%s", showPath(path, prefix), id, yamlnode.DidYouMean(id, names))
		}
		if path != "" {
			path += "."
		}
		path += id
		s = next
	}
	return nil
}

func showPath(p string, prefix []string) string {
	if p == "" {
		return "the data"
	}
	return strings.Join(prefix, "") + p
}
