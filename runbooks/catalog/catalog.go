// Package catalog is every runbook runbot knows, by name: the built-ins
// embedded in the binary (package builtin) and those in the directories
// configured, loaded with every problem of every file; and how runbook
// files are found beside their test files.
package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/builtin"
)

// Catalog is every runbook runbot knows: the built-ins embedded in the
// binary plus those in configured directories, which may override a
// built-in of the same name.
type Catalog struct {
	byName map[string]*runbooks.Runbook
}

// Load loads the built-ins and every *.yaml/*.yml file in dirs. It returns
// all problems of all files; a broken file does not hide the others.
func Load(dirs ...string) (*Catalog, yamlnode.Problems, error) {
	c := &Catalog{byName: map[string]*runbooks.Runbook{}}
	var all yamlnode.Problems
	entries, err := fs.Glob(builtin.FS, "*.yaml")
	if err != nil {
		return nil, nil, fmt.Errorf("list built-in runbooks: %w", err)
	}
	for _, e := range entries {
		if IsTestFile(e) {
			continue
		}
		data, err := builtin.FS.ReadFile(e)
		if err != nil {
			return nil, nil, fmt.Errorf("read built-in runbook %s: %w", e, err)
		}
		rb, problems := runbooks.Parse("builtin:"+filepath.Base(e), data)
		all = append(all, problems...)
		if rb != nil {
			c.byName[rb.Name] = rb
		}
	}
	for _, dir := range dirs {
		files, err := Files(dir)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			rb, problems, err := runbooks.LoadFile(f)
			if err != nil {
				return nil, nil, err
			}
			all = append(all, problems...)
			if rb != nil {
				c.byName[rb.Name] = rb
			}
		}
	}
	return c, all, nil
}

// Files lists the runbook files under path (a file or a directory, not
// descending into testdata, and leaving out test files).
func Files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read runbooks: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" && p != path {
			return filepath.SkipDir
		}
		if !d.IsDir() && !IsTestFile(p) && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read runbooks in %s: %w", path, err)
	}
	sort.Strings(files)
	return files, nil
}

// Get returns a runbook by name, or an error with a did-you-mean.
func (c *Catalog) Get(name string) (*runbooks.Runbook, error) {
	if rb, ok := c.byName[name]; ok {
		return rb, nil
	}
	hint := yamlnode.DidYouMean(name, c.Names())
	if rb := c.ByCommand(name); rb != nil && hint == "" {
		// Whoever has used the bot in the chat knows a runbook by its
		// command word, which runbot list shows beside its name.
		hint = fmt.Sprintf(" (did you mean %q? %s is its chat command)", rb.Name, name)
	}
	return nil, fmt.Errorf("unknown runbook %q%s (runbot list shows them all)", name, hint)
}

// ByCommand returns the runbook whose trigger word is cmd.
func (c *Catalog) ByCommand(cmd string) *runbooks.Runbook {
	for _, rb := range c.byName {
		if rb.Triggers.Command == cmd {
			return rb
		}
	}
	return nil
}

// Names lists runbook names, sorted.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// All returns every runbook, sorted by name.
func (c *Catalog) All() []*runbooks.Runbook {
	out := make([]*runbooks.Runbook, 0, len(c.byName))
	for _, n := range c.Names() {
		out = append(out, c.byName[n])
	}
	return out
}

// Add puts a runbook loaded from elsewhere (e.g. a path on the command
// line) into the catalog, replacing one of the same name.
func (c *Catalog) Add(rb *runbooks.Runbook) { c.byName[rb.Name] = rb }

// TestFileSuffix ends the name of a runbook test file, which sits beside
// the runbooks it tests (sglang-pd-wedge_test.yaml), as Go's tests do.
const TestFileSuffix = "_test.yaml"

// IsTestFile reports whether path names a runbook test file rather than a
// runbook.
func IsTestFile(path string) bool {
	return strings.HasSuffix(path, TestFileSuffix) || strings.HasSuffix(path, "_test.yml")
}
