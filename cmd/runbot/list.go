package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/runbooks"
)

func newListCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the runbooks runbot knows, with their triggers and params",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCatalog(cmd, g)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			w := newOutput(tw)
			w.println("RUNBOOK\tCOMMAND\tSCHEDULE\tALERTS\tTITLE")
			for _, rb := range c.All() {
				alerts := 0
				alerts += len(rb.Triggers.Alerts)
				w.printf("%s\t%s\t%s\t%d\t%s\n", rb.Name, dash(rb.Triggers.Command), dash(rb.Triggers.Schedule), alerts, rb.Title)
				// Under the title: the last cell of a line does not widen
				// its column.
				w.printf("\t\t\t\t%s\n", paramsLine(rb))
			}
			if w.err != nil {
				return w.err
			}
			return tw.Flush()
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// loadCatalog loads the runbooks and refuses to go on if any is broken:
// running a half-valid catalog would hide a mistake until an alert fires.
func loadCatalog(cmd *cobra.Command, g *globalFlags) (*runbooks.Catalog, error) {
	c, problems, err := runbooks.LoadCatalog(g.runbookDirs...)
	if err != nil {
		return nil, err
	}
	if len(problems.Errors()) > 0 {
		for _, p := range problems {
			note(cmd.ErrOrStderr(), "%s\n", p.String())
		}
		return nil, fmt.Errorf("runbooks have errors (see above); fix them or run runbot lint")
	}
	return c, nil
}
