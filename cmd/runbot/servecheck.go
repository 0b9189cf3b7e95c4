package main

import (
	"fmt"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/spf13/cobra"
)

// reportCheck prints serve --check's problems, one per line on stdout, and
// a summary on stderr; an error among them is exit 1.
func reportCheck(cmd *cobra.Command, cfgPath string, problems yamlnode.Problems, excerpts bool) error {
	out := console.NewOutput(cmd.OutOrStdout())
	console.Problems(out, problems, excerpts)
	if errs := len(problems.Errors()); errs > 0 {
		console.Note(cmd.ErrOrStderr(), "%s: %d error(s): runbot serve would not start\n", cfgPath, errs)
		return exitError{exitBadInput}
	}
	summary := fmt.Sprintf("%s: config, inventory, runbooks and their references checked: no errors", cfgPath)
	if w := len(problems); w > 0 {
		summary += fmt.Sprintf(", %d warning(s)", w)
	}
	console.Note(cmd.ErrOrStderr(), "%s\n", summary)
	return out.Err()
}
