package escape

import (
	"text/template"
	"text/template/parse"
)

// IsWholeValue reports whether a template is one output action and
// nothing else, such as a request body that is entirely a param
// (`{{ .params.body }}`). Such a value lands in no structure it could
// break out of, so there is nothing to escape it for and nothing to warn
// about: it is the whole document, as the URL escaper lets a whole URL
// come from one value.
func IsWholeValue(t *template.Template) bool {
	if t.Tree == nil || t.Root == nil || len(t.Root.Nodes) != 1 {
		return false
	}
	a, ok := t.Root.Nodes[0].(*parse.ActionNode)
	return ok && len(a.Pipe.Decl) == 0
}
