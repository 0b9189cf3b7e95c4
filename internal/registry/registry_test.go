package registry_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/registry"
)

// A registry is a value: it copies what it is built from, refuses names
// that are empty, taken or whose type its kind refuses, and lists names
// sorted.
func TestRegistry(t *testing.T) {
	t.Parallel()
	src := map[string]int{"b": 2, "a": 1}
	r := registry.New("widget", src, func(_ string, n int) error {
		if n < 0 {
			return errors.New("it is negative")
		}
		return nil
	})
	src["c"] = 3
	require.Equal(t, []string{"a", "b"}, r.Names(), "the registry holds a copy")

	require.NoError(t, r.Register("d", 4))
	got, ok := r.Lookup("d")
	require.True(t, ok)
	require.Equal(t, 4, got)
	_, ok = r.Lookup("c")
	require.False(t, ok)

	for name, tc := range map[string]struct {
		name string
		v    int
		want string
	}{
		"empty name": {name: "", v: 1, want: "register a widget: a name is required"},
		"taken":      {name: "a", v: 9, want: `register widget "a": the name is taken`},
		"refused":    {name: "e", v: -1, want: `register widget "e": it is negative`},
	} {
		require.EqualError(t, r.Register(tc.name, tc.v), tc.want, name)
	}
	v, _ := r.Lookup("a")
	require.Equal(t, 1, v, "a refused registration changes nothing")

	other := registry.New[int]("widget", nil, nil)
	require.Empty(t, other.Names(), "one registry's types reach no other")
}

// Registering while others look up is safe (run with -race).
func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	r := registry.New[int]("widget", nil, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			require.NoError(t, r.Register(fmt.Sprint("w", i), i))
			_, _ = r.Lookup("w0")
			_ = r.Names()
		})
	}
	wg.Wait()
	require.Len(t, r.Names(), 8)
}
