package console

import (
	"fmt"
	"io"
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

// LintSummary says on w (stderr) what runbot lint found in files runbook
// files: how many errors, or none and how many warnings. Silence on
// success would leave a user unsure anything was read (a wrong path, an
// empty directory); the summary goes to stderr so that stdout stays the
// problems alone.
func LintSummary(w io.Writer, problems yamlnode.Problems, files int) {
	errs := len(problems.Errors())
	if errs > 0 {
		Note(w, "%d error(s) in %d file(s)\n", errs, files)
		return
	}
	summary := fmt.Sprintf("%d runbook file(s) checked: no errors", files)
	if n := len(problems) - errs; n > 0 {
		summary += fmt.Sprintf(", %d warning(s)", n)
	}
	Note(w, "%s\n", summary)
}

// CheckSummary says on w (stderr) what runbot serve --check found in the
// config at cfgPath and what it names: how many errors, or none and how
// many warnings.
func CheckSummary(w io.Writer, cfgPath string, problems yamlnode.Problems) {
	if errs := len(problems.Errors()); errs > 0 {
		Note(w, "%s: %d error(s): runbot serve would not start\n", cfgPath, errs)
		return
	}
	summary := fmt.Sprintf("%s: config, inventory, runbooks and their references checked: no errors", cfgPath)
	if n := len(problems); n > 0 {
		summary += fmt.Sprintf(", %d warning(s)", n)
	}
	Note(w, "%s\n", summary)
}
