package tmpl_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/shell"
	"github.com/runbot/runbot/runbooks/escape"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// hostile are values a param, an alert label or a chat message could carry,
// each trying to break out of where it is inserted.
var hostile = []string{
	`de"fault`,
	`x", "max_tokens": 99999, "y": "`,
	`back\slash\`,
	`\"`,
	"line\nbreak\r\nand\ttab",
	"unicode ☃ é 日本 \u2028\u2029 😀",
	`</script><script>alert(1)</script>`,
	`{{ .params.model }}`,
	"",
	"\x01\x1f control",
	`'single' $(id) ` + "`id`",
}

// chatBody is the shipped sglang-pd-wedge chat step's body.
const chatBody = `{"model": "{{ .params.model }}", "messages": [{"role": "user", "content": "runbot probe: say ok"}], "max_tokens": 16, "stream": true}`

func render(t *testing.T, esc argspec.Escape, src string, params map[string]any) (string, error) {
	t.Helper()
	tp, err := tmpl.ParseFor("test", src, esc)
	require.NoError(t, err)
	return tp.Execute(map[string]any{"params": params})
}

// TestJSONStringEscaping: a value inside a JSON string comes out as valid
// JSON whose field says exactly the value, with no field added.
func TestJSONStringEscaping(t *testing.T) {
	for _, v := range hostile {
		t.Run(v, func(t *testing.T) {
			out, err := render(t, argspec.EscapeJSON, chatBody, map[string]any{"model": v})
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.Equal(t, v, got["model"])
			require.ElementsMatch(t, []string{"model", "messages", "max_tokens", "stream"}, keys(got))
			require.Equal(t, 16.0, got["max_tokens"])
		})
	}
}

// TestJSONValueEscaping: a value in a bare value position becomes a JSON
// literal of its own type, and one in a key position a quoted key.
func TestJSONValueEscaping(t *testing.T) {
	src := `{"model": {{ .params.model }}, "n": {{ .params.n }}, "on": {{ .params.on }}, "t": {{ .params.t }}, "x": [{{ .params.x }}], {{ .params.model }}: 1}`
	for _, v := range hostile {
		t.Run(v, func(t *testing.T) {
			params := map[string]any{"model": v, "n": 7, "on": true, "t": 35 * time.Second, "x": 2.5}
			out, err := render(t, argspec.EscapeJSON, src, params)
			require.NoError(t, err)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			want := map[string]any{"model": v, "n": 7.0, "on": true, "t": "35s", "x": []any{2.5}, v: 1.0}
			if v == "model" {
				delete(want, "model")
			}
			require.Equal(t, want, got)
		})
	}
}

// TestJSONTemplatesThatCannotBeEscaped: where a value's place in the JSON
// cannot be told, parsing fails and says where.
func TestJSONTemplatesThatCannotBeEscaped(t *testing.T) {
	cases := []struct {
		src    string
		offset string // the text the problem points at
		err    string
	}{
		{`{"n": 1{{ .params.n }}}`, `{{ .params.n }}}`, "would run into the number or literal before it"},
		{`{"a": "x" {{ .params.n }}}`, `{{ .params.n }}}`, "would follow a complete value"},
		{`{"a" {{ .params.n }}: 1}`, `{{ .params.n }}: 1}`, "between a key and its colon"},
		{`{"a": "\{{ .params.n }}"}`, `{{ .params.n }}"}`, "would follow a backslash escape"},
		{`{"a": {{ if .params.n }}1{{ end }}}`, `{{ if .params.n }}`, "branches of this {{if}} end in different places"},
		{`[{{ range .params.xs }}{{ . }}{{ end }}]`, `{{ range .params.xs }}`, "insert the whole list as one value"},
		{`{"a": 1`, ``, "the document ends before its object is closed"},
		{`{"a": "x}`, ``, "the document ends inside a string"},
		{`{"a": 1,, {{ .params.n }}}`, `, {{ .params.n }}}`, `unexpected ',' where an object key in double quotes belongs`},
		{`{"a": "b` + "\n" + `{{ .params.n }}"}`, "\n{{", "raw control character"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			_, err := tmpl.ParseFor("test", c.src, argspec.EscapeJSON)
			require.ErrorContains(t, err, c.err)
			require.ErrorContains(t, err, "JSON")
			var tp *escape.Problem
			require.ErrorAs(t, err, &tp, "the problem has no offset")
			require.Equal(t, c.offset, c.src[tp.Offset:min(tp.Offset+len(c.offset), len(c.src))])
		})
	}
}

// TestJSONTemplatesThatCanBeEscaped: if, with and range are fine where each
// way through them ends in the same place.
func TestJSONTemplatesThatCanBeEscaped(t *testing.T) {
	cases := []struct {
		src  string
		want string
	}{
		{`{"a": {{ if .params.on }}{{ .params.s }}{{ else }}null{{ end }}}`, `{"a": "de\"fault"}`},
		{`{"a": "{{ with .params.s }}pre {{ . }}{{ end }}"}`, `{"a": "pre de\"fault"}`},
		{`{"a": [{{ range .params.xs }}{{ . }}, {{ end }}0]}`, `{"a": ["x\"", "y\\", 0]}`},
		{`{"a": {{ .params.xs }}}`, `{"a": ["x\"","y\\"]}`},
		{`{"a": "{{ .params.s | printf "%s!" }}"}`, `{"a": "de\"fault!"}`},
		{`{"a": {{ $x := .params.s }}"{{ $x }}"}`, `{"a": "de\"fault"}`},
		{`{}`, `{}`},
		{`  [ ]  `, `  [ ]  `},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			out, err := render(t, argspec.EscapeJSON, c.src, map[string]any{"on": true, "s": `de"fault`, "xs": []string{`x"`, `y\`}})
			require.NoError(t, err)
			require.Equal(t, c.want, out)
		})
	}
}

// TestJSONResultMustParse: `raw` opts out of escaping, not out of JSON; a
// broken document fails to render instead of being sent.
func TestJSONResultMustParse(t *testing.T) {
	out, err := render(t, argspec.EscapeJSON, `{"n": {{ .params.n | raw }}}`, map[string]any{"n": "1, \"extra\": 2"})
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 1, "extra": 2}`, out)
	_, err = render(t, argspec.EscapeJSON, `{"model": "{{ .params.model | raw }}"}`, map[string]any{"model": `de"fault`})
	require.ErrorContains(t, err, "the result is not valid JSON")
}

// TestJSONRefusesWhatItCannotSayExactly: text that is not UTF-8 would be
// changed by JSON, so it is refused.
func TestJSONRefusesWhatItCannotSayExactly(t *testing.T) {
	_, err := render(t, argspec.EscapeJSON, chatBody, map[string]any{"model": "bad \xff byte"})
	require.ErrorContains(t, err, "not valid UTF-8")
}

// TestNonJSONBodyIsNotEscaped: a body that is not JSON keeps text/template's
// output.
func TestNonJSONBodyIsNotEscaped(t *testing.T) {
	out, err := render(t, argspec.EscapeJSON, `model={{ .params.model }}`, map[string]any{"model": `de"fault`})
	require.NoError(t, err)
	require.Equal(t, `model=de"fault`, out)
}

// TestURLPathEscaping: a value in a path stays inside its one segment; a
// value after ? is one query component.
func TestURLPathEscaping(t *testing.T) {
	values := []string{`../admin?x=1#f`, `a/b`, `a b`, `%2e%2e`, `x?y=1&z`, `ünï`, `;x`, `..a`, `{{ .x }}`}
	for _, v := range values {
		t.Run(v, func(t *testing.T) {
			out, err := render(t, argspec.EscapeURLPath, `/v1/models/{{ .params.v }}/info?q={{ .params.v }}&n=1`, map[string]any{"v": v})
			require.NoError(t, err)
			u, err := url.Parse("http://127.0.0.1:1" + out)
			require.NoError(t, err, out)
			segs := strings.Split(u.EscapedPath(), "/")
			require.Len(t, segs, 5, out)
			require.Equal(t, []string{"", "v1", "models"}, segs[:3])
			require.Equal(t, "info", segs[4])
			seg, err := url.PathUnescape(segs[3])
			require.NoError(t, err)
			require.Equal(t, v, seg)
			require.Equal(t, url.Values{"q": {v}, "n": {"1"}}, u.Query())
			require.Empty(t, u.Fragment)
		})
	}
}

// TestURLPathRefusesDotSegments: . and .. would leave their segment once a
// server cleans the path.
func TestURLPathRefusesDotSegments(t *testing.T) {
	for _, v := range []string{".", ".."} {
		_, err := render(t, argspec.EscapeURLPath, `/v1/{{ .params.v }}/x`, map[string]any{"v": v})
		require.ErrorContains(t, err, "would leave its path segment")
	}
}

// TestURLEscaping: in an absolute URL, each value is checked or escaped for
// its part: the start, the host, the path, the query.
func TestURLEscaping(t *testing.T) {
	cases := []struct {
		src  string
		v    string
		want string
		err  string
	}{
		{src: `{{ .params.v }}/v1/models`, v: "http://10.0.0.5:30000", want: "http://10.0.0.5:30000/v1/models"},
		{src: `{{ .params.v }}/v1/models`, v: "javascript:alert(1)", err: "want an http or https URL with a host"},
		{src: `{{ .params.v }}/v1/models`, v: "http://h/?q=1", err: "may not have a query or fragment"},
		{src: `{{ .params.v }}`, v: "http://h:1/metrics?x=1", want: "http://h:1/metrics?x=1"},
		{src: `{{ .params.v }}`, v: "/relative", err: "want an http or https URL"},
		{src: `http://{{ .params.v }}:8000/metrics`, v: "gpu-1.example.com", want: "http://gpu-1.example.com:8000/metrics"},
		{src: `http://{{ .params.v }}:8000/metrics`, v: "evil.com/x?", err: `'/' cannot be part of a host name`},
		{src: `http://{{ .params.v }}:8000/metrics`, v: "user@evil.com", err: `'@' cannot be part of a host name`},
		{src: `http://h/v1/{{ .params.v }}?q={{ .params.v }}`, v: "../a?b#c", want: "http://h/v1/..%2Fa%3Fb%23c?q=..%2Fa%3Fb%23c"},
		{src: `http://h/v1#{{ .params.v }}`, v: "a b/c", want: "http://h/v1#a%20b%2Fc"},
	}
	for _, c := range cases {
		t.Run(c.src+" "+c.v, func(t *testing.T) {
			out, err := render(t, argspec.EscapeURL, c.src, map[string]any{"v": c.v})
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, out)
		})
	}
	_, err := tmpl.ParseFor("test", `http{{ .params.s }}://h/`, argspec.EscapeURL)
	require.ErrorContains(t, err, "a value in the scheme cannot be escaped")
}

// TestURLQueryEscaping: in a query string every value is one component.
func TestURLQueryEscaping(t *testing.T) {
	out, err := render(t, argspec.EscapeURLQuery, `a={{ .params.v }}&b=2`, map[string]any{"v": "1&b=3#x y"})
	require.NoError(t, err)
	q, err := url.ParseQuery(out)
	require.NoError(t, err)
	require.Equal(t, url.Values{"a": {"1&b=3#x y"}, "b": {"2"}}, q)
}

// TestHeaderEscaping: a value that would end the header line is refused,
// and so is a result that `raw` or the template's own text breaks.
func TestHeaderEscaping(t *testing.T) {
	cases := []struct {
		src, v string
		err    bool
	}{
		{src: `Bearer {{ .params.v }}`, v: "abc.def"},
		{src: `Bearer {{ .params.v }}`, v: `de"fault ☃ </script>`},
		{src: `Bearer {{ .params.v }}`, v: "x\r\nX-Evil: 1", err: true},
		{src: `Bearer {{ .params.v }}`, v: "x\nX-Evil: 1", err: true},
		{src: `Bearer {{ .params.v }}`, v: "x\rX-Evil: 1", err: true},
		{src: `Bearer {{ .params.v }}`, v: "x\x00y", err: true},
		{src: `Bearer {{ .params.v | raw }}`, v: "x\r\nX-Evil: 1", err: true},
		{src: "Bearer\r\n{{ .params.v }}", v: "x", err: true},
	}
	for _, c := range cases {
		t.Run(c.src+" "+c.v, func(t *testing.T) {
			out, err := render(t, argspec.EscapeHeader, c.src, map[string]any{"v": c.v})
			if c.err {
				require.ErrorContains(t, err, "may not hold a line break or a NUL byte")
				return
			}
			require.NoError(t, err)
			require.Equal(t, strings.Replace(c.src, "{{ .params.v }}", c.v, 1), out)
		})
	}
}

// TestShellEscapingUnchanged: in a command every value is one shell word,
// as before; raw opts out.
func TestShellEscapingUnchanged(t *testing.T) {
	for _, v := range hostile {
		t.Run(v, func(t *testing.T) {
			out, err := render(t, argspec.EscapeShell, `echo {{ .params.v }}{{ if .params.v }} and {{ .params.v }}{{ end }}`, map[string]any{"v": v})
			require.NoError(t, err)
			want := "echo " + shell.Quote(v)
			if v != "" {
				want += " and " + shell.Quote(v)
			}
			require.Equal(t, want, out)

			legacy, err := tmpl.Parse("test", `echo {{ .params.v }}`, true)
			require.NoError(t, err)
			out, err = legacy.Execute(map[string]any{"params": map[string]any{"v": v}})
			require.NoError(t, err)
			require.Equal(t, "echo "+shell.Quote(v), out)
		})
	}
	out, err := render(t, argspec.EscapeShell, `echo {{ .params.v | raw }}`, map[string]any{"v": "$HOME"})
	require.NoError(t, err)
	require.Equal(t, "echo $HOME", out)
	_, err = render(t, argspec.EscapeShell, `echo {{ .params.missing }}`, map[string]any{})
	require.ErrorContains(t, err, "missing")
}

// TestSummariesAreNotEscaped: text meant for people keeps text/template's
// output.
func TestSummariesAreNotEscaped(t *testing.T) {
	tp, err := tmpl.Parse("summary", `model {{ .params.model }}`, false)
	require.NoError(t, err)
	out, err := tp.Execute(map[string]any{"params": map[string]any{"model": `de"fault </script>`}})
	require.NoError(t, err)
	require.Equal(t, `model de"fault </script>`, out)
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
