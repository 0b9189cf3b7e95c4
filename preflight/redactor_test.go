package preflight_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/preflight"
)

// Without a config the CLI redacts the default patterns and --redact's,
// and says that the config's secrets are not known; a --redact pattern
// that does not compile is refused, with or without a config, and a
// config that does not load is refused as --config's.
func TestCLIRedactor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		extra      []string
		shown      string
		hidden     string
		notice     string
		wantErr    string
	}{
		{"no config", "", []string{`ticket-\d+`}, "see ticket-42", "ticket-42", preflight.CLINotice, ""},
		{"a bad pattern", "", []string{"("}, "", "", "", "--redact: "},
		{"a config that does not load", filepath.Join(t.TempDir(), "missing.yaml"), nil, "", "", "", "--config: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, notice, _, err := preflight.CLIRedactor(tc.path, tc.extra)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.notice, notice)
			require.NotContains(t, r.Redact(tc.shown), tc.hidden)
		})
	}
}
