package main

import (
	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/spf13/cobra"
)

// reportCheck prints serve --check's problems, one per line on stdout, and
// a summary on stderr; an error among them is exit 1.
func reportCheck(cmd *cobra.Command, cfgPath string, problems yamlnode.Problems, excerpts bool) error {
	out := console.NewOutput(cmd.OutOrStdout())
	console.Problems(out, problems, excerpts)
	console.CheckSummary(cmd.ErrOrStderr(), cfgPath, problems)
	if len(problems.Errors()) > 0 {
		return exitError{exitBadInput}
	}
	return out.Err()
}
