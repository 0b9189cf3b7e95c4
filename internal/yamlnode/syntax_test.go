package yamlnode

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyntaxErrorPosition checks that a syntax error is reported on the
// line a user has to fix, not on the line of the block around it.
func TestSyntaxErrorPosition(t *testing.T) {
	cases := []struct {
		name      string
		doc       string
		line, col int
	}{
		{"mis-indented key deep in a file", "hosts:\n  a:\n    address: x\n   bad: [\n", 4, 4},
		{"mis-indented list item key", "name: x\nsteps:\n  - id: a\n    check: command\n   target: host\n", 5, 4},
		{"tab as indentation", "a:\n\tb: 1\n", 2, 1},
		{"mapping value in a plain scalar", "a: 1\nb: c: d\n", 2, 1},
		{"unterminated quote", "a: 1\nb: 'x\nc: 2\n", 2, 1},
		{"error after a valid multi-line flow list", "a: [1,\n  2]\nb: c: d\n", 3, 1},
		{"unclosed flow list at the end", "a: 1\nb: [1,\n", 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Decoder{File: "f.yaml"}
			require.Nil(t, d.Parse([]byte(tc.doc)))
			require.Len(t, d.Problems, 1)
			p := d.Problems[0]
			require.Contains(t, p.Msg, "invalid YAML: ")
			require.Equal(t, [2]int{tc.line, tc.col}, [2]int{p.Line, p.Col}, p.String())
		})
	}
}
