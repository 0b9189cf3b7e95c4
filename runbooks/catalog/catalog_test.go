package catalog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/catalog"
)

// local is a runbook of a configured directory. It takes the name of a
// built-in, which it replaces.
const local = `name: host-basics
title: The directory's own
doc: Replaces the shipped runbook of its name.
params:
  host: {type: host, required: true}
triggers:
  command: mine
steps:
  - id: up
    check: command
    target: host
    with:
      cmd: 'echo ok=yes'
      extract: {ok: 'ok=(\w+)'}
`

func write(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// TestCatalogLoadsBuiltinsAndDirectories: the shipped runbooks load clean
// and without their test files, and a directory's runbook replaces the
// built-in of its name.
func TestCatalogLoadsBuiltinsAndDirectories(t *testing.T) {
	shipped, problems, err := catalog.Load()
	require.NoError(t, err)
	// The shipped test files sit beside the runbooks; read as runbooks,
	// they would be problems.
	require.Empty(t, problems)
	require.Contains(t, shipped.Names(), "sglang-pd-wedge")
	builtin, err := shipped.Get("host-basics")
	require.NoError(t, err)

	dir := t.TempDir()
	write(t, filepath.Join(dir, "host-basics.yaml"), local)
	write(t, filepath.Join(dir, "host-basics"+catalog.TestFileSuffix), "not: a runbook\n")
	write(t, filepath.Join(dir, "testdata", "broken.yaml"), "not: a runbook\n")
	files, err := catalog.Files(dir)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "host-basics.yaml")}, files, "test files and testdata are no runbooks")

	c, problems, err := catalog.Load(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, shipped.Names(), c.Names())
	rb, err := c.Get("host-basics")
	require.NoError(t, err)
	require.Equal(t, "The directory's own", rb.Title)
	require.NotEqual(t, builtin.Title, rb.Title)
	require.Same(t, rb, c.ByCommand("mine"))
}

// TestCatalogGetSuggests: an unknown name is an error that suggests the
// runbook a chat command word names.
func TestCatalogGetSuggests(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "host-basics.yaml"), local)
	c, _, err := catalog.Load(dir)
	require.NoError(t, err)
	_, err = c.Get("mine")
	require.ErrorContains(t, err, `unknown runbook "mine" (did you mean "host-basics"? mine is its chat command)`)
}
