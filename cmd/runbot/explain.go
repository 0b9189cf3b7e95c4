package main

import (
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
			out := newOutput(cmd.OutOrStdout())
			rb := p.Runbook
			out.printf("%s — %s\n", rb.Name, rb.Title)
			shown := rb.MaskSecrets(p.Text)
			for _, k := range sortedKeys(shown) {
				out.printf("  param %s = %s\n", k, shown[k])
			}
			out.println()
			for _, ps := range eng.Explain(p) {
				needs := ""
				if len(ps.Needs) > 0 {
					needs = " after " + strings.Join(ps.Needs, ", ")
				}
				out.printf("step %s (%s) on %s, timeout %s%s\n", ps.Step, ps.Check, ps.Target, ps.Timeout, needs)
				for _, l := range ps.Lines {
					out.printf("    %s\n", l)
				}
			}
			if len(rb.Remediations) > 0 {
				out.println()
				for _, r := range rb.Remediations {
					out.printf("remediation %s (needs approval by %s", r.Name, strings.Join(r.Approval.Approvers, ", "))
					if r.Approval.TwoPerson {
						out.print(", two-person rule")
					}
					out.println(")")
					acts, err := eng.ExplainRemediation(cmd.Context(), p, r)
					if err != nil {
						return err
					}
					for _, a := range acts {
						out.printf("    %s on %s\n", a.Action, a.Target)
						for _, l := range a.Args {
							out.printf("        %s\n", l)
						}
					}
				}
			}
			return out.err
		},
	}
	f.register(cmd)
	return cmd
}
