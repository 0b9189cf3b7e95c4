package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Decoder collects problems while a caller walks a document.
type Decoder struct {
	File     string
	Problems Problems
	// Source is the document Parse read, for positions inside block
	// scalars (BlockPos).
	Source []byte
}

// Parse parses one YAML document. A syntax error is recorded as a problem
// and nil is returned.
func (d *Decoder) Parse(data []byte) *yaml.Node {
	d.Source = data
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.Problems = append(d.Problems, Problem{File: d.File, Line: 1, Col: 1, Severity: Error, Msg: "file is empty"})
			return nil
		}
		d.syntaxError(data, err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.Errorf(&extra, "only one YAML document per file is supported")
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return &doc
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// maxSyntaxScan bounds the prefix scan syntaxLine does, so a huge broken
// file costs no more than this many parses.
const maxSyntaxScan = 2000

// maxSyntaxCol bounds the column search syntaxCol does on the offending
// line, for the same reason: a longer line gets the column its text starts
// at.
const maxSyntaxCol = 500

func (d *Decoder) syntaxError(data []byte, err error) {
	msg := err.Error()
	line := 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	col := 1
	if l, c, ok := syntaxLine(data, msg); ok {
		line, col = l, c
	}
	d.Problems = append(d.Problems, Problem{File: d.File, Line: line, Col: col, Severity: Error, Msg: "invalid YAML: " + msg})
}

// syntaxMsg is a YAML error's message without the "yaml: line N: " the
// library puts before it.
func syntaxMsg(err error) string {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		return m[2]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// syntaxLine finds the line and column a syntax error with message msg is
// at. The YAML library reports the line of the enclosing block instead
// (often line 1 for a mis-indented key deep in a file), or no line at all,
// and keeps the true position to itself. The first line that no longer
// parses is the one after the longest prefix of whole lines that does: a
// prefix cut inside a valid multi-line construct fails too, so the scan
// walks back from the end rather than forward from the start. The column
// is syntaxCol's, or where the line's text starts, which is where an
// indentation mistake shows, when that finds none.
func syntaxLine(data []byte, msg string) (line, col int, ok bool) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxSyntaxScan {
		return 0, 0, false
	}
	for k := len(lines) - 1; k >= 0; k-- {
		head := bytes.Join(lines[:k], nil)
		var n yaml.Node
		if yaml.Unmarshal(head, &n) != nil {
			continue
		}
		text := lines[k]
		if c, ok := syntaxCol(head, []rune(strings.TrimRight(string(text), "\r\n")), msg); ok {
			return k + 1, c, true
		}
		return k + 1, len(text) - len(bytes.TrimLeft(text, " ")) + 1, true
	}
	return 0, 0, false
}

// syntaxCol finds the column (in characters, from 1, as yaml.v3 counts
// them) of a syntax error on a line whose text is text and whose document
// before it, head, parses. The library fails at the first character that
// cannot continue the document: a tab in the indentation, the second ':'
// of a plain scalar, the quote or bracket that is never closed. So the
// error is at the shortest cut of the line after which the document fails
// with the error's own message; a cut failing with another message (the
// end of the document reached inside a key, say) is only a consequence of
// the cut. It gives false when no cut reproduces the message, as when the
// error needs the lines after this one to show.
func syntaxCol(head []byte, text []rune, msg string) (int, bool) {
	doc := bytes.Clone(head)
	for c := 1; c <= len(text) && c <= maxSyntaxCol; c++ {
		doc = utf8.AppendRune(doc, text[c-1])
		var n yaml.Node
		if err := yaml.Unmarshal(doc, &n); err != nil && syntaxMsg(err) == msg {
			return tokenStart(text, c, msg), true
		}
	}
	return 0, false
}

// tokenStart moves a column syntaxCol found to where the user has to look
// for the errors that are the parser's rather than the scanner's ("did not
// find expected key", "did not find expected '-' indicator", "did not find
// expected ',' or '}'"): those are about a token, which the cut completes
// at its end. A key mis-indented is complete at its ':', and the key's
// text is what is out of place; a flow list or mapping the parser expected
// to continue is the bracket that opened it, which was never closed.
func tokenStart(text []rune, c int, msg string) int {
	if !strings.HasPrefix(msg, "did not find expected ") {
		return c
	}
	if strings.HasPrefix(msg, "did not find expected ',' or ") {
		if open := unclosedBracket(text[:c]); open >= 0 {
			return open + 1
		}
		return c
	}
	if text[c-1] != ':' {
		return c
	}
	// The key starts after the indentation and the "- " or "? " of the
	// entries it is in.
	i := 0
	for {
		for i < c-1 && text[i] == ' ' {
			i++
		}
		if i+1 < c-1 && (text[i] == '-' || text[i] == '?') && text[i+1] == ' ' {
			i++
			continue
		}
		break
	}
	return i + 1
}

// unclosedBracket returns the index of the last '[' or '{' in text that
// no bracket closes, leaving out quoted text, or -1.
func unclosedBracket(text []rune) int {
	var open []int
	var quote rune
	for i, r := range text {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '[' || r == '{':
			open = append(open, i)
		case (r == ']' || r == '}') && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	if len(open) == 0 {
		return -1
	}
	return open[len(open)-1]
}

// Errorf records an error at node n.
func (d *Decoder) Errorf(n *yaml.Node, format string, args ...any) {
	p := PosOf(n)
	d.Problems = append(d.Problems, Problem{File: d.File, Line: p.Line, Col: p.Col, Severity: Error, Msg: fmt.Sprintf(format, args...)})
}

// ErrorAt records an error at an explicit position.
func (d *Decoder) ErrorAt(p Pos, format string, args ...any) {
	d.Problems = append(d.Problems, Problem{File: d.File, Line: p.Line, Col: p.Col, Severity: Error, Msg: fmt.Sprintf(format, args...)})
}

// Warnf records a warning at node n.
func (d *Decoder) Warnf(n *yaml.Node, format string, args ...any) {
	p := PosOf(n)
	d.Problems = append(d.Problems, Problem{File: d.File, Line: p.Line, Col: p.Col, Severity: Warning, Msg: fmt.Sprintf(format, args...)})
}

// Fields walks a mapping node strictly: keys not in known are errors with a
// did-you-mean, duplicate keys are errors, and fn sees each known key.
// It reports a non-mapping node as an error and returns false.
func (d *Decoder) Fields(n *yaml.Node, what string, known []string, fn func(key string, k, v *yaml.Node)) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "%s must be a mapping, got %s", what, kindName(n))
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		key := k.Value
		if seen[key] {
			d.Errorf(k, "%s: key %q appears twice", what, key)
			continue
		}
		seen[key] = true
		if known != nil && !contains(known, key) {
			d.Errorf(k, "%s: unknown key %q%s", what, key, DidYouMean(key, known))
			continue
		}
		fn(key, k, v)
	}
	return true
}

// Pairs walks a mapping whose keys are names chosen by the author (step ids,
// host names), in document order.
func (d *Decoder) Pairs(n *yaml.Node, what string, fn func(key string, k, v *yaml.Node)) {
	d.Fields(n, what, nil, fn)
}

// Items walks a sequence node.
func (d *Decoder) Items(n *yaml.Node, what string, fn func(i int, v *yaml.Node)) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, "%s must be a list, got %s", what, kindName(n))
		return false
	}
	for i, v := range n.Content {
		fn(i, resolveAlias(v))
	}
	return true
}

// String decodes a scalar as a string.
func (d *Decoder) String(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.Errorf(n, "%s must be a string, got %s", what, kindName(n))
		return ""
	}
	return n.Value
}

// Bool decodes a boolean scalar.
func (d *Decoder) Bool(n *yaml.Node, what string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		d.Errorf(n, "%s must be true or false, got %s", what, describe(n))
	}
	return b
}

// Int decodes an integer scalar.
func (d *Decoder) Int(n *yaml.Node, what string) int {
	var i int
	if n.Kind != yaml.ScalarNode || n.Decode(&i) != nil {
		d.Errorf(n, "%s must be an integer, got %s", what, describe(n))
	}
	return i
}

// Duration decodes a Go duration such as 30s or 5m.
func (d *Decoder) Duration(n *yaml.Node, what string) time.Duration {
	if n.Kind != yaml.ScalarNode {
		d.Errorf(n, "%s must be a duration like 30s, got %s", what, kindName(n))
		return 0
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Errorf(n, "%s must be a duration like 30s or 5m, got %q", what, n.Value)
	}
	return v
}

// Strings decodes a list of strings; a single scalar counts as a list of one.
func (d *Decoder) Strings(n *yaml.Node, what string) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{d.String(n, what)}
	}
	var out []string
	d.Items(n, what, func(_ int, v *yaml.Node) { out = append(out, d.String(v, what+" item")) })
	return out
}

// StringMap decodes a mapping of strings to strings.
func (d *Decoder) StringMap(n *yaml.Node, what string) map[string]string {
	out := map[string]string{}
	d.Pairs(n, what, func(key string, _, v *yaml.Node) { out[key] = d.String(v, what+"."+key) })
	return out
}

// Raw decodes any node into plain Go values (string, int, float64, bool,
// []any, map[string]any), the form argspec.Convert takes.
func (d *Decoder) Raw(n *yaml.Node) any {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int":
			var i int
			if n.Decode(&i) == nil {
				return i
			}
		case "!!float":
			var f float64
			if n.Decode(&f) == nil {
				return f
			}
		case "!!bool":
			var b bool
			if n.Decode(&b) == nil {
				return b
			}
		case "!!null":
			return nil
		}
		return n.Value
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = d.Raw(c)
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[n.Content[i].Value] = d.Raw(n.Content[i+1])
		}
		return out
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func describe(n *yaml.Node) string { return kindName(n) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
