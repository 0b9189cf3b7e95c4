package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// RUNBOT_TEST_CLOCK_OFFSET shifts a serve replica's host clock for its
// store. A value that is not a duration stops serve, and serve --check,
// with the variable named; a valid one, or none, passes the check. The
// serve cases run with a cancelled context: were the variable not read,
// serve would stop at its listen with another error.
func TestServeTestClockOffset(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "runbot.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "listen: 127.0.0.1:%d\nstore: %s\n", freePort(t), filepath.Join(dir, "runbot.db")), 0o600))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name, value string
		check       bool
		want        string // in the error; none when empty
	}{
		{name: "unset", value: "", check: true},
		{name: "30s fast", value: "30s", check: true},
		{name: "30s slow", value: "-30s", check: true},
		{name: "no unit, checked", value: "30", check: true, want: `read the test hook RUNBOT_TEST_CLOCK_OFFSET="30": want a duration such as 30s or -30s`},
		{name: "no unit", value: "30", want: `read the test hook RUNBOT_TEST_CLOCK_OFFSET="30": want a duration such as 30s or -30s`},
		{name: "a word", value: "fast", want: `read the test hook RUNBOT_TEST_CLOCK_OFFSET="fast": want a duration such as 30s or -30s`},
		{name: "a space", value: "30 s", want: `read the test hook RUNBOT_TEST_CLOCK_OFFSET="30 s": want a duration such as 30s or -30s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(testClockOffsetEnv, tc.value)
			args := []string{"serve", "--config", cfg}
			if tc.check {
				args = append(args, "--check")
			}
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(args)
			err := root.ExecuteContext(cancelled)
			if tc.want == "" {
				require.NoError(t, err, out.String())
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
