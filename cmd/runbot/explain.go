package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
			eng, p := pr.engine, pr.p
			out := cmd.OutOrStdout()
			rb := p.Runbook
			fmt.Fprintf(out, "%s — %s\n", rb.Name, rb.Title)
			for _, k := range sortedKeys(p.Text) {
				fmt.Fprintf(out, "  param %s = %s\n", k, p.Text[k])
			}
			fmt.Fprintln(out)
			for _, ps := range eng.Explain(p) {
				needs := ""
				if len(ps.Needs) > 0 {
					needs = " after " + strings.Join(ps.Needs, ", ")
				}
				fmt.Fprintf(out, "step %s (%s) on %s, timeout %s%s\n", ps.Step, ps.Check, ps.Target, ps.Timeout, needs)
				for _, l := range ps.Lines {
					fmt.Fprintf(out, "    %s\n", l)
				}
			}
			if len(rb.Remediations) > 0 {
				fmt.Fprintln(out)
				for _, r := range rb.Remediations {
					fmt.Fprintf(out, "remediation %s (needs approval by %s", r.Name, strings.Join(r.Approval.Approvers, ", "))
					if r.Approval.TwoPerson {
						fmt.Fprint(out, ", two-person rule")
					}
					fmt.Fprintln(out, ")")
					for _, a := range r.Actions {
						fmt.Fprintf(out, "    %s on %s\n", a.Action, strings.Join(a.Targets, ", "))
					}
				}
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
