package runbooks

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks/tmpl"
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
func checkFields(t *tmpl.Template, root *shape) error {
	return t.RootFields(func(chain []string) error { return checkChain(chain, root, ".") })
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
