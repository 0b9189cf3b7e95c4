package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/yamlnode"
)

// printProblems prints each problem as file:line:col: message, the line
// editors and CI logs link; with excerpts, the offending line follows it,
// with a caret under the column. A file that cannot be read again (a
// built-in runbook, a file removed since) gets no excerpt.
func printProblems(out *console.Output, problems yamlnode.Problems, excerpts bool) {
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

// addExcerptsFlag is --excerpts, on by default when stdout is a terminal:
// a person reads the line with its caret, a script or an editor reads the
// file:line:col lines alone.
func addExcerptsFlag(cmd *cobra.Command, excerpts *bool) {
	cmd.Flags().BoolVar(excerpts, "excerpts", isTTY(os.Stdout), "after each problem, show its line with a caret under the column (default: when stdout is a terminal)")
}

func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
