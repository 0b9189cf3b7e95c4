package console

import (
	"os"
	"strings"

	"github.com/runbot/runbot/internal/yamlnode"
)

// Problems prints each problem as file:line:col: message, the line
// editors and CI logs link; with excerpts, the offending line follows it,
// with a caret under the column. A file that cannot be read again (a
// built-in runbook, a file removed since) gets no excerpt.
func Problems(out *Output, problems yamlnode.Problems, excerpts bool) {
	sources := map[string][]byte{}
	for _, p := range problems {
		out.Println(p.String())
		if !excerpts {
			continue
		}
		src, ok := sources[p.File]
		if !ok {
			src, _ = os.ReadFile(p.File) // unreadable: no excerpt
			sources[p.File] = src
		}
		if ex := p.Excerpt(src); ex != "" {
			out.Println(indentLines(ex, "  "))
		}
	}
}

func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
