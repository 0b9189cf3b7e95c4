package runbooks_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestInvalidRunbooks walks testdata/invalid: each runbook there must
// produce exactly the problems in its .golden file, all in one pass.
func TestInvalidRunbooks(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			rb, problems, err := runbooks.LoadFile(f)
			require.NoError(t, err)
			var lines []string
			for _, p := range problems {
				lines = append(lines, p.String())
			}
			got := strings.Join(lines, "\n") + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file; run go test ./runbooks -run TestInvalidRunbooks -update")
			require.Equal(t, string(want), got)
			if len(problems.Errors()) > 0 {
				require.Nil(t, rb, "a runbook with errors must not be returned")
			}
			for _, p := range problems {
				require.Equal(t, f, p.File)
				require.Positive(t, p.Line)
				require.Positive(t, p.Col)
			}
		})
	}
}

// TestShippedRunbooksAreClean lints every built-in runbook.
func TestShippedRunbooksAreClean(t *testing.T) {
	c, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	require.NotEmpty(t, c.Names())
}
