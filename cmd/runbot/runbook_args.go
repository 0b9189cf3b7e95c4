package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
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

// findRunbook accepts a runbook name or a path to a runbook file, and
// returns the catalog it is part of. An argument that looks like a path
// is never taken for a name: a missing file is reported as such, not as
// an unknown runbook named after it.
func findRunbook(cmd *cobra.Command, g *globalFlags, name string) (*runbooks.Runbook, *catalog.Catalog, error) {
	c, err := loadCatalog(cmd, g)
	if err != nil {
		return nil, nil, err
	}
	if !looksLikePath(name) {
		rb, err := c.Get(name)
		return rb, c, err
	}
	if _, err := os.Stat(name); err != nil {
		// The path is in the message already; the stat in front of the
		// reason would only be noise.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, fmt.Errorf("runbook file %s: %w%s", name, err, similarRunbook(name, c))
	}
	rb, problems, err := runbooks.LoadFile(name)
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

// looksLikePath reports whether a runbook argument names a file rather
// than a runbook: runbook names have neither an extension nor a
// directory.
func looksLikePath(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") ||
		strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator)
}

// similarRunbook is the did-you-mean for a runbook file that does not
// exist: a runbook file beside it of a similar name (or of the same name
// with its extension), else a runbook in the catalog named like the file.
func similarRunbook(path string, c *catalog.Catalog) string {
	dir, base := filepath.Split(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	var files []string
	byStem := map[string]string{}
	entries, _ := os.ReadDir(cmp.Or(dir, "."))
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || catalog.IsTestFile(n) || (!strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml")) {
			continue
		}
		s := strings.TrimSuffix(strings.TrimSuffix(n, ".yaml"), ".yml")
		files = append(files, s)
		byStem[s] = n
	}
	if s := yamlnode.Suggest(stem, files); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", filepath.Join(dir, byStem[s]))
	}
	if s := yamlnode.Suggest(stem, c.Names()); s != "" {
		return fmt.Sprintf(" (did you mean the runbook %q?)", s)
	}
	return ""
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
	inv, err := inventory.Load(f.inventory)
	if err != nil {
		return nil, err
	}
	eng, closeRunners := bind.NewEngine(inv)
	p, err := eng.Prepare(ctx, rb, given)
	if err != nil {
		closeRunners()
		return nil, err
	}
	return &prepared{engine: eng, p: p, catalog: c, close: closeRunners}, nil
}
