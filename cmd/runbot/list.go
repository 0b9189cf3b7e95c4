package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks/catalog"
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
			return console.Runbooks(cmd.OutOrStdout(), c.All())
		},
	}
}

// loadCatalog loads the runbooks and refuses to go on if any is broken:
// running a half-valid catalog would hide a mistake until an alert fires.
func loadCatalog(cmd *cobra.Command, g *globalFlags) (*catalog.Catalog, error) {
	c, problems, err := catalog.Load(g.runbookDirs...)
	if err != nil {
		return nil, err
	}
	if len(problems.Errors()) > 0 {
		for _, p := range problems {
			console.Note(cmd.ErrOrStderr(), "%s\n", p.String())
		}
		return nil, fmt.Errorf("runbooks have errors (see above); fix them or run runbot lint")
	}
	return c, nil
}
