package catalog_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/catalog"
)

// A runbook argument with an extension or a directory is a file, and a
// file that does not exist is reported with the runbook file beside it
// or the catalog's runbook its name is like.
func TestLoadPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk-full.yaml"), []byte("not: a runbook\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "disk-full_test.yaml"), []byte("tests: []\n"), 0o600))
	for _, tc := range []struct {
		name, path string
		names      []string
		want       string
	}{
		{"a file beside it", filepath.Join(dir, "disk-ful.yaml"), nil, "(did you mean " + filepath.Join(dir, "disk-full.yaml") + "?)"},
		{"the same name with its extension", filepath.Join(dir, "disk-full.yml"), nil, "(did you mean " + filepath.Join(dir, "disk-full.yaml") + "?)"},
		{"a runbook of the catalog", filepath.Join(dir, "sglang-pd-wedg.yaml"), []string{"sglang-pd-wedge"}, `(did you mean the runbook "sglang-pd-wedge"?)`},
		{"nothing like it", filepath.Join(dir, "zzz.yaml"), []string{"sglang-pd-wedge"}, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.True(t, catalog.LooksLikePath(tc.path))
			_, _, err := catalog.LoadPath(tc.path, tc.names)
			require.ErrorContains(t, err, "runbook file "+tc.path+": ")
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.False(t, catalog.LooksLikePath("sglang-pd-wedge"))
}
