package refdoc_test

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/refdoc"
)

var update = flag.Bool("update", false, "rewrite the generated files")

// TestGeneratedFilesAreCurrent fails when a spec changed but schema.json or
// docs/reference.md were not regenerated (`make generate`).
func TestGeneratedFilesAreCurrent(t *testing.T) {
	schema, err := refdoc.Schema()
	require.NoError(t, err)
	files := map[string][]byte{"../schema.json": schema, "../../docs/reference.md": refdoc.ReferenceDoc()}
	for path, want := range files {
		if *update {
			require.NoError(t, os.WriteFile(path, want, 0o644))
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run make generate")
		require.Equal(t, string(want), string(got), "%s is stale: run make generate", path)
	}
}
