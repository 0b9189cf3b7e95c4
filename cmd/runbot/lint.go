package main

import (
	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
)

func newLintCmd(g *globalFlags) *cobra.Command {
	var excerpts bool
	cmd := &cobra.Command{
		Use:   "lint [PATH...]",
		Short: "Check runbooks: every problem as file:line:col, exit 1 if any is an error",
		Long: "Check runbook files or directories (default: the built-ins and --runbooks).\n" +
			"Prints every problem as file:line:col: message. Exit 0 when there are no errors.",
		RunE: func(cmd *cobra.Command, paths []string) error {
			var problems yamlnode.Problems
			files := 0
			if len(paths) == 0 {
				c, ps, err := catalog.Load(g.runbookDirs...)
				if err != nil {
					return err
				}
				problems, files = ps, len(c.Names())
			}
			for _, p := range paths {
				list, err := catalog.Files(p)
				if err != nil {
					return err
				}
				for _, f := range list {
					_, ps, err := runbooks.LoadFile(f)
					if err != nil {
						return err
					}
					problems = append(problems, ps...)
					files++
				}
			}
			problems.Sort()
			out := console.NewOutput(cmd.OutOrStdout())
			console.Problems(out, problems, excerpts)
			console.LintSummary(cmd.ErrOrStderr(), problems, files)
			if len(problems.Errors()) > 0 {
				return exitError{exitBadInput}
			}
			return out.Err()
		},
	}
	addExcerptsFlag(cmd, &excerpts)
	return cmd
}
