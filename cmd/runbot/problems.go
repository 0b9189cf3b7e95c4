package main

import (
	"os"

	"github.com/spf13/cobra"
)

// addExcerptsFlag is --excerpts, on by default when stdout is a terminal:
// a person reads the line with its caret, a script or an editor reads the
// file:line:col lines alone.
func addExcerptsFlag(cmd *cobra.Command, excerpts *bool) {
	cmd.Flags().BoolVar(excerpts, "excerpts", isTTY(os.Stdout), "after each problem, show its line with a caret under the column (default: when stdout is a terminal)")
}
