package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
)

// runFlags are shared by run and explain.
type runFlags struct {
	inventory string
	params    []string
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.inventory, "inventory", "i", os.Getenv("RUNBOT_INVENTORY"), "inventory file (env RUNBOT_INVENTORY)")
	cmd.Flags().StringArrayVarP(&f.params, "param", "p", nil, "param as key=value (repeatable)")
}

func (f *runFlags) paramMap() (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range f.params {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--param %q: want key=value", kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--param %s given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// findRunbook accepts a runbook name or a path to a runbook file
// (catalog.LooksLikePath), and returns the catalog it is part of.
func findRunbook(cmd *cobra.Command, g *globalFlags, name string) (*runbooks.Runbook, *catalog.Catalog, error) {
	c, err := loadCatalog(cmd, g)
	if err != nil {
		return nil, nil, err
	}
	if !catalog.LooksLikePath(name) {
		rb, err := c.Get(name)
		return rb, c, err
	}
	rb, problems, err := catalog.LoadPath(name, c.Names())
	if err != nil {
		return nil, nil, err
	}
	for _, p := range problems {
		console.Note(cmd.ErrOrStderr(), "%s\n", p.String())
	}
	if rb == nil {
		return nil, nil, fmt.Errorf("runbook %s has errors (see above)", name)
	}
	c.Add(rb)
	return rb, c, nil
}

// prepared is a runbook ready to run, with what was needed to get there.
type prepared struct {
	engine  *engine.Engine
	p       *engine.Prepared
	catalog *catalog.Catalog
	close   func()
}

// prepare loads the inventory and binds the runbook to params and targets.
func prepare(ctx context.Context, cmd *cobra.Command, g *globalFlags, f *runFlags, name string) (*prepared, error) {
	rb, c, err := findRunbook(cmd, g, name)
	if err != nil {
		return nil, err
	}
	given, err := f.paramMap()
	if err != nil {
		return nil, err
	}
	if f.inventory == "" {
		return nil, fmt.Errorf("runbook %s needs an inventory: pass --inventory FILE", rb.Name)
	}
	eng, p, closeRunners, err := bind.Prepare(ctx, f.inventory, rb, given)
	if err != nil {
		return nil, err
	}
	return &prepared{engine: eng, p: p, catalog: c, close: closeRunners}, nil
}
