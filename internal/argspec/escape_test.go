package argspec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
)

func TestEscapeContext(t *testing.T) {
	cases := []struct {
		arg  argspec.Arg
		want argspec.Escape
	}{
		{argspec.Arg{Type: argspec.Shell}, argspec.EscapeShell},
		{argspec.Arg{Type: argspec.String}, argspec.EscapeNone},
		{argspec.Arg{Type: argspec.String, Escape: argspec.EscapeJSON}, argspec.EscapeJSON},
		{argspec.Arg{Type: argspec.StringMap, Escape: argspec.EscapeHeader}, argspec.EscapeHeader},
		{argspec.Arg{Type: argspec.Shell, Escape: argspec.EscapeNone}, argspec.EscapeNone},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.arg.EscapeContext(), "%+v", c.arg)
	}
	for _, e := range argspec.Escapes {
		if e != argspec.EscapeNone {
			require.NotEmpty(t, e.Describe(), "context %s is not described", e)
		}
	}
}
