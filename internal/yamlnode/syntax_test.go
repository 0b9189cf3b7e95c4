package yamlnode

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyntaxErrorPosition checks that a syntax error is reported where a
// user has to fix it: on the line of the mistake, not on the line of the
// block around it, and at the column of the offending character, not at
// the start of the line.
func TestSyntaxErrorPosition(t *testing.T) {
	cases := []struct {
		name      string
		doc       string
		line, col int
		msg       string
	}{
		{"mis-indented key deep in a file", "hosts:\n  a:\n    address: x\n   bad: [\n", 4, 4, "did not find expected key"},
		{"mis-indented list item key", "name: x\nsteps:\n  - id: a\n    check: command\n   target: host\n", 5, 4, "did not find expected '-' indicator"},
		{"tab as indentation", "a:\n\tb: 1\n", 2, 1, "found character that cannot start any token"},
		{"tab after spaces in a list item", "steps:\n  - id: a\n  \t check: x\n", 3, 3, "found a tab character that violates indentation"},
		{"tabs in a nested block", "steps:\n  - id: a\n    with:\n\t\tcmd: x\n", 4, 1, "found character that cannot start any token"},
		{"mapping value in a plain scalar", "a: 1\nb: c: d\n", 2, 5, "mapping values are not allowed in this context"},
		{"mapping value in a step's value", "steps:\n  - id: a\n    with: {cmd: \"echo a: b\"}\n    run: x: y\n", 4, 11, "mapping values are not allowed in this context"},
		{"mapping value after a quoted scalar", "a: 'it''s' x: y\n", 1, 13, "mapping values are not allowed in this context"},
		{"a continuation line that is a key", "key: value\n  other: x\n", 2, 8, "mapping values are not allowed in this context"},
		{"unterminated quote", "a: 1\nb: 'x\nc: 2\n", 2, 4, "found unexpected end of stream"},
		{"unterminated double quote", "a: 1\nb: \"x\nc: 2\n", 2, 4, "found unexpected end of stream"},
		{"unknown escape in a double quote", "a: \"x\\qy\"\n", 1, 6, "found unknown escape character"},
		{"character that cannot start a token", "a: @foo\n", 1, 4, "found character that cannot start any token"},
		{"list item indented more than its siblings", "steps:\n  - id: a\n   - id: b\n", 3, 4, "did not find expected '-' indicator"},
		{"list item indented less than its siblings", "steps:\n- id: a\n  check: x\n - id: b\n", 4, 2, "did not find expected key"},
		{"key among list items", "list:\n  - a\n  b: 1\n", 3, 3, "did not find expected '-' indicator"},
		{"error after a valid multi-line flow list", "a: [1,\n  2]\nb: c: d\n", 3, 5, "mapping values are not allowed in this context"},
		{"unclosed flow list at the end", "a: 1\nb: [1,\n", 2, 4, "did not find expected node content"},
		{"unclosed flow mapping", "a: {x: 1\nb: 2\n", 1, 4, "did not find expected ',' or '}'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Decoder{File: "f.yaml"}
			require.Nil(t, d.Parse([]byte(tc.doc)))
			require.Len(t, d.Problems, 1)
			p := d.Problems[0]
			require.Equal(t, "invalid YAML: "+tc.msg, p.Msg)
			require.Equal(t, [2]int{tc.line, tc.col}, [2]int{p.Line, p.Col}, "%s\n%s", p.String(), p.Excerpt([]byte(tc.doc)))
		})
	}
}

// TestSyntaxErrorPositionLongLine checks that the column search gives up
// on a very long line (it parses the document once per character) and
// points at the line's text instead.
func TestSyntaxErrorPositionLongLine(t *testing.T) {
	long := strings.Repeat("x", maxSyntaxCol)
	doc := "x: 1\ny: " + long + ": c\n"
	d := &Decoder{File: "f.yaml"}
	require.Nil(t, d.Parse([]byte(doc)))
	require.Len(t, d.Problems, 1)
	require.Equal(t, [2]int{2, 1}, [2]int{d.Problems[0].Line, d.Problems[0].Col}, d.Problems[0].String())
}
