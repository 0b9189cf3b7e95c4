package yamlnode

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestBlockPos(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		off  int // offset in the value of "findings.b"'s b
		want Pos
		ok   bool
	}{
		{name: "more indented: folding keeps its newline", src: "when: >-\n  steps.s.ok &&\n    x\n", off: len("steps.s.ok && "), ok: false},
		{name: "folded, one indent", src: "when: >-\n  steps.s.ok &&\n  (findings.a || findings.b)\n", off: len("steps.s.ok && (findings.a || findings."), want: Pos{Line: 3, Col: 3 + len("(findings.a || findings.")}, ok: true},
		{name: "literal", src: "when: |\n  a &&\n  findings.b\n", off: len("a && findings."), want: Pos{Line: 3, Col: 3 + len("findings.")}, ok: true},
		{name: "first line", src: "when: >\n    findings.b\n", off: len("findings."), want: Pos{Line: 2, Col: 5 + len("findings.")}, ok: true},
		{name: "blank line folds to a newline", src: "when: >-\n  a &&\n\n  findings.b\n", off: len("a &&\nfindings."), ok: false},
		{name: "past the end", src: "when: >-\n  a\nnext: 1\n", off: 10, ok: false},
		{name: "plain scalar", src: "when: a && findings.b\n", off: 3, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			require.NoError(t, yaml.Unmarshal([]byte(tc.src), &doc))
			n := doc.Content[0].Content[1]
			got, ok := BlockPos([]byte(tc.src), n, tc.off)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}
}
