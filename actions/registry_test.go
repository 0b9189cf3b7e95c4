package actions

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
)

func TestRegistry(t *testing.T) {
	require.Equal(t, []string{"command", "config_edit", "daemon_reload", "systemd_restart"}, Default.Names())
	for _, name := range Default.Names() {
		typ, ok := Default.Lookup(name)
		require.True(t, ok)
		require.Equal(t, name, typ.Spec.Name)
		require.NotEmpty(t, typ.Spec.Doc)
		require.Positive(t, typ.Timeout)
		for _, a := range typ.Spec.Args {
			require.NotEmpty(t, a.Doc, "%s.%s", name, a.Name)
			// Bounds, like defaults, have the Go type the argument decodes to.
			for _, bound := range []any{a.Min, a.Max} {
				if bound != nil {
					got, err := argspec.Convert(a.Type, bound)
					require.NoError(t, err, "%s.%s", name, a.Name)
					require.Equal(t, bound, got, "bound of %s.%s", name, a.Name)
				}
			}
			if a.Default == nil {
				continue
			}
			// A default must already have the Go type its argument decodes to.
			got, err := argspec.Convert(a.Type, a.Default)
			require.NoError(t, err, "%s.%s", name, a.Name)
			require.Equal(t, a.Default, got, "%s.%s", name, a.Name)
			require.NoError(t, a.Validate(a.Default), "%s.%s", name, a.Name)
		}
	}
}
