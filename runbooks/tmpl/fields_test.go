package tmpl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/tmpl"
)

// TestFieldWalks pins what each of the template's field walks reads, in
// order: Fields each chain once, a command's own operands before the
// pipelines nested in them, in range and with too; RootFields what the
// root of the data is asked for ($.a as well as .a), not under range and
// with; AllFields every chain with repeats, parenthesised chains included.
func TestFieldWalks(t *testing.T) {
	tests := []struct {
		name, src string
		fields    []string
		root      []string
		all       []string
		calls     map[string]bool
	}{
		{
			name:   "plain",
			src:    `{{ .labels.service }} and {{ .labels.service }}`,
			fields: []string{"labels.service"},
			root:   []string{"labels.service", "labels.service"},
			all:    []string{"labels.service", "labels.service"},
		},
		{
			name:   "a nested pipeline comes after its command in Fields, in place elsewhere",
			src:    `{{ printf "%s-%s" (quote .labels.a) .labels.b }}`,
			fields: []string{"labels.b", "labels.a"},
			root:   []string{"labels.a", "labels.b"},
			all:    []string{"labels.a", "labels.b"},
			calls:  map[string]bool{"printf": true, "quote": true, "default": false},
		},
		{
			name:   "range and with move the dot",
			src:    `{{ range .steps.a.items }}{{ .name }}{{ else }}{{ .none }}{{ end }}{{ with .x }}{{ .y }}{{ end }}{{ if .c }}{{ .d }}{{ else }}{{ .e }}{{ end }}`,
			fields: []string{"steps.a.items", "name", "none", "x", "y", "c", "d", "e"},
			root:   []string{"steps.a.items", "x", "c", "d", "e"},
			all:    []string{"steps.a.items", "name", "none", "x", "y", "c", "d", "e"},
		},
		{
			name:   "root variables and chains",
			src:    `{{ range .r }}{{ $.params.p }}{{ end }}{{ $.params.q }}{{ (.steps.s).values }}{{ $v := .w }}{{ $v.z }}`,
			fields: []string{"r", "w"},
			root:   []string{"r", "params.q", "w"},
			all:    []string{"r", "steps.s", "w"},
		},
		{
			name:   "calls in a branch",
			src:    `{{ if .a }}{{ default "x" .labels.b }}{{ end }}`,
			fields: []string{"a", "labels.b"},
			root:   []string{"a", "labels.b"},
			all:    []string{"a", "labels.b"},
			calls:  map[string]bool{"default": true, "printf": false},
		},
	}
	join := func(chains [][]string) []string {
		var out []string
		for _, c := range chains {
			out = append(out, strings.Join(c, "."))
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := tmpl.Parse("test", tt.src, false)
			require.NoError(t, err)
			require.Equal(t, tt.fields, join(tp.Fields()), "Fields")
			require.Equal(t, tt.all, join(tp.AllFields()), "AllFields")
			var root []string
			require.NoError(t, tp.RootFields(func(chain []string) error {
				root = append(root, strings.Join(chain, "."))
				return nil
			}))
			require.Equal(t, tt.root, root, "RootFields")
			for name, want := range tt.calls {
				require.Equal(t, want, tp.Calls(name), "Calls(%q)", name)
			}
		})
	}
}

// TestRootFieldsStopsAtTheFirstError: check is not called again once it
// returned an error, and that error is RootFields'.
func TestRootFieldsStopsAtTheFirstError(t *testing.T) {
	tp, err := tmpl.Parse("test", `{{ .a }}{{ printf "%v %v" (len .b) .c }}{{ if .d }}{{ .e }}{{ end }}`, false)
	require.NoError(t, err)
	stop := errors.New("no such field")
	var seen []string
	err = tp.RootFields(func(chain []string) error {
		seen = append(seen, strings.Join(chain, "."))
		if chain[0] == "b" {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, []string{"a", "b"}, seen)
}
