package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/stretchr/testify/require"
)

// TestRearmCLI: `runbot rearm` needs who looked, and refuses when no
// failed fix keeps the breaker open (the re-arm itself is tested with the
// Remediator).
func TestRearmCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runbot.db")
	for _, tc := range []struct {
		args []string
		want error
		says string
	}{
		{[]string{"rearm", "--store", db, "dsv4", "decode_hung"}, nil, "--as USER is required"},
		{[]string{"rearm", "--store", db, "dsv4", "decode_hung", "--as", "alice"}, remediation.ErrBreakerClosed, "re-arm the breaker of decode_hung on dsv4"},
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(tc.args)
		err := root.Execute()
		require.Error(t, err)
		if tc.want != nil {
			require.ErrorIs(t, err, tc.want)
		}
		require.ErrorContains(t, err, tc.says)
	}
}
