package main

import (
	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
)

func newExplainCmd(g *globalFlags) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "explain RUNBOOK",
		Short: "Show every command and request a run would make, on which target; runs nothing",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pr, err := prepare(cmd.Context(), cmd, g, f, args[0])
			if err != nil {
				return err
			}
			defer pr.close()
			var fixes []console.Fix
			for _, r := range pr.p.Runbook.Remediations {
				acts, err := pr.engine.ExplainRemediation(cmd.Context(), pr.p, r)
				if err != nil {
					return err
				}
				fixes = append(fixes, console.Fix{Remediation: r, Actions: acts})
			}
			return console.Explain(cmd.OutOrStdout(), pr.p, pr.engine.Explain(pr.p), fixes)
		},
	}
	f.register(cmd)
	return cmd
}
