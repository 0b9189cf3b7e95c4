package yamlnode

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExcerpt(t *testing.T) {
	t.Parallel()
	src := []byte("schedules:\n  - runbook: dsik\n\tcron: x\nname: \"é\" bad\n")
	for _, tc := range []struct {
		name      string
		line, col int
		want      string
	}{
		{name: "caret under the column", line: 2, col: 14, want: "   2 |   - runbook: dsik\n     |              ^"},
		{name: "first column", line: 1, col: 1, want: "   1 | schedules:\n     | ^"},
		{name: "tabs are kept", line: 3, col: 8, want: "   3 | \tcron: x\n     | \t      ^"},
		{name: "characters, not bytes", line: 4, col: 11, want: "   4 | name: \"é\" bad\n     |           ^"},
		{name: "past the end of the line", line: 1, col: 12, want: "   1 | schedules:\n     |            ^"},
		{name: "no such line", line: 9, col: 1, want: ""},
		{name: "no position", line: 0, col: 0, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Problem{File: "f.yaml", Line: tc.line, Col: tc.col}.Excerpt(src))
		})
	}
}
