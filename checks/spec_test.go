package checks

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
)

var goTypeOf = map[argspec.Type]reflect.Type{
	argspec.String: reflect.TypeFor[string](), argspec.Shell: reflect.TypeFor[string](), argspec.Regex: reflect.TypeFor[string](),
	argspec.Int: reflect.TypeFor[int](), argspec.Float: reflect.TypeFor[float64](), argspec.Bool: reflect.TypeFor[bool](),
	argspec.Duration: reflect.TypeFor[time.Duration](), argspec.StringList: reflect.TypeFor[[]string](),
	argspec.StringMap: reflect.TypeFor[map[string]string](), argspec.RegexMap: reflect.TypeFor[map[string]string](),
}

// TestRegistrySpecs keeps every check's declaration usable by lint, docs
// and expressions: arguments documented with defaults of the right Go type,
// outputs that are structs whose every field (nested ones too) has expr,
// json and doc tags.
func TestRegistrySpecs(t *testing.T) {
	require.Equal(t, []string{"command", "flag", "grep_config", "http_probe", "log_progress", "metrics_sample", "read_file", "unit_state"}, Default.Names())
	for _, name := range Default.Names() {
		t.Run(name, func(t *testing.T) {
			typ, ok := Default.Lookup(name)
			require.True(t, ok)
			require.Equal(t, name, typ.Spec.Name)
			require.NotEmpty(t, typ.Spec.Doc)
			require.Positive(t, typ.Timeout)
			require.NotNil(t, typ.Check)
			for _, a := range typ.Spec.Args {
				require.NotEmpty(t, a.Doc, "argument %s", a.Name)
				want, known := goTypeOf[a.Type]
				require.True(t, known, "argument %s has unknown type %s", a.Name, a.Type)
				if a.Default != nil {
					require.Equal(t, want, reflect.TypeOf(a.Default), "default of %s", a.Name)
					require.NoError(t, a.Validate(a.Default), "default of %s", a.Name)
				}
				for _, bound := range []any{a.Min, a.Max} {
					if bound != nil {
						require.Equal(t, want, reflect.TypeOf(bound), "bound of %s", a.Name)
					}
				}
				if len(a.Enum) > 0 {
					require.True(t, slices.Contains(a.Enum, a.Default.(string)), "default of %s is not in its enum", a.Name)
				}
			}
			require.Equal(t, reflect.Struct, typ.Spec.Outputs.Kind())
			checkTags(t, typ.Spec.Outputs, map[reflect.Type]bool{})

			// Plan never panics, even on a target the inventory left bare
			// and with no connection (as `runbot explain` may call it).
			bare := Env{Target: target.Target{Role: "decode", Runner: &remote.Local{}}, Args: argspec.Values{}}
			require.NotEmpty(t, typ.Check.Plan(bare))
			bare.Target.Runner = nil
			require.NotEmpty(t, typ.Check.Plan(bare))
		})
	}
}

func checkTags(t *testing.T, st reflect.Type, seen map[reflect.Type]bool) {
	t.Helper()
	if seen[st] {
		return
	}
	seen[st] = true
	for f := range st.Fields() {
		for _, tag := range []string{"expr", "json", "doc"} {
			require.NotEmpty(t, f.Tag.Get(tag), "%s.%s has no %s tag", st.Name(), f.Name, tag)
		}
		require.Equal(t, f.Tag.Get("expr"), f.Tag.Get("json"), "%s.%s: expr and json names differ", st.Name(), f.Name)
		ft := f.Type
		for ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() {
			checkTags(t, ft, seen)
		}
	}
}
