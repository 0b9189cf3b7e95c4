// Package escape escapes template values for where they land, as
// html/template does for HTML: a runbook's templates are parsed, their
// text scanned in output order to learn where each action's value goes
// (a shell command, inside a JSON string, a URL's path, a header), and
// each action's pipeline gets the escaper for that place. A place whose
// meaning cannot be told from the text (a value right after a JSON value,
// branches of an if that end in different places) is a Problem reported
// at load time, never a guess at run time.
package escape

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/runbot/runbot/internal/argspec"
)

// Names of the escapers the rewrite appends. They start with an underscore
// so that they do not read like functions meant for authors.
const (
	escShell     = "shq"
	escJSONStr   = "_json_str"
	escJSONValue = "_json_value"
	escJSONKey   = "_json_key"
	escURLStart  = "_url_start"
	escURLWhole  = "_url_whole"
	escURLHost   = "_url_host"
	escURLPath   = "_url_path"
	escURLQuery  = "_url_query"
	escURLFrag   = "_url_frag"
	escHeader    = "_header"
)

// Funcs are the escapers Rewrite appends, for a template's FuncMap.
var Funcs = template.FuncMap{
	escJSONStr:   jsonString,
	escJSONValue: jsonValue,
	escJSONKey:   jsonKey,
	escURLStart:  func(v any) (string, error) { return urlStart(v, false) },
	escURLWhole:  func(v any) (string, error) { return urlStart(v, true) },
	escURLHost:   urlHost,
	escURLPath:   urlPathSegment,
	escURLQuery:  func(v any) string { return escapeText(v, url.QueryEscape) },
	escURLFrag:   func(v any) string { return escapeText(v, url.PathEscape) },
	escHeader:    headerValue,
}

// Problem is a problem at a byte offset of a template's source, so
// that lint can point at the action rather than at the whole argument.
type Problem struct {
	Offset int
	Msg    string
}

func (p *Problem) Error() string { return p.Msg }

// IsJSON reports whether a template starting in st is a JSON document.
func IsJSON(st State) bool {
	_, ok := st.(jsonState)
	return ok
}

// looksLikeJSON reports whether a template in a JSON context is a JSON
// document: its text starts with { or [ (and not with a template action).
func looksLikeJSON(src string) bool {
	s := strings.TrimSpace(src)
	return strings.HasPrefix(s, "[") || (strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "{{"))
}

// State is where a template's output stands within its context. States
// are small comparable values: two branches of an if agree when their end
// states are equal.
type State interface {
	// text advances over literal text. A problem is reported with its byte
	// offset in s.
	text(s string) (State, int, error)
	// action returns the escaper for a value inserted here, and the state
	// after it.
	action() (string, State, error)
	// end reports a problem with where the whole template ends, if any.
	end() error
	// what names the context in messages ("JSON", "a URL").
	what() string
}

// Initial returns the state at the start of a template in context esc,
// or nil when values there are inserted as they are.
func Initial(esc argspec.Escape, src string) State {
	switch esc {
	case argspec.EscapeShell:
		return plainState{fn: escShell, name: "a command"}
	case argspec.EscapeHeader:
		return plainState{fn: escHeader, name: "a header"}
	case argspec.EscapeJSON:
		if looksLikeJSON(src) {
			return jsonState{pos: jValue}
		}
	case argspec.EscapeURL:
		return urlState{part: uStart}
	case argspec.EscapeURLPath:
		return urlState{part: uPath}
	case argspec.EscapeURLQuery:
		return urlState{part: uQuery}
	}
	return nil
}

// Rewrite rewrites every printing action of t's tree, parsed from
// src, to end in the escaper for where its value lands, starting in state
// st.
func Rewrite(t *template.Template, src string, st State) error {
	if t.Tree == nil || t.Root == nil {
		return nil
	}
	if u, ok := st.(urlState); ok && u.part == uStart && len(t.Root.Nodes) == 1 {
		// The whole URL comes from one value, so it may carry its own
		// query.
		if a, ok := t.Root.Nodes[0].(*parse.ActionNode); ok && len(a.Pipe.Decl) == 0 {
			appendEscaper(a, escURLWhole)
			return nil
		}
	}
	e := &escaper{src: src, fns: map[*parse.ActionNode]string{}}
	endState, err := e.list(t.Root, st)
	if err != nil {
		return err
	}
	if err := endState.end(); err != nil {
		return &Problem{Offset: len(src), Msg: fmt.Sprintf("%s: %v", endState.what(), err)}
	}
	// Only a template that escaped completely is rewritten, so a problem
	// never leaves half of its actions escaped.
	for a, fn := range e.fns {
		appendEscaper(a, fn)
	}
	return nil
}

type escaper struct {
	src string
	fns map[*parse.ActionNode]string
	// loops holds the state at the start of each enclosing range, which
	// break and continue must agree with.
	loops []State
}

func (e *escaper) list(l *parse.ListNode, st State) (State, error) {
	if l == nil {
		return st, nil
	}
	for _, n := range l.Nodes {
		var err error
		switch n := n.(type) {
		case *parse.TextNode:
			next, off, terr := st.text(string(n.Text))
			if terr != nil {
				return nil, &Problem{Offset: int(n.Pos) + off, Msg: fmt.Sprintf("%s: %v", st.what(), terr)}
			}
			st = next
		case *parse.ActionNode:
			if len(n.Pipe.Decl) > 0 {
				continue // {{ $x := ... }} prints nothing
			}
			fn, next, aerr := st.action()
			if aerr != nil {
				return nil, e.problem(n.Pos, "cannot escape %s for %s: %v", e.actionText(n.Pos), st.what(), aerr)
			}
			e.fns[n] = fn
			st = next
		case *parse.IfNode:
			st, err = e.branches("if", n.Pos, n.List, n.ElseList, st)
		case *parse.WithNode:
			st, err = e.branches("with", n.Pos, n.List, n.ElseList, st)
		case *parse.RangeNode:
			st, err = e.loop(n, st)
		case *parse.BreakNode, *parse.ContinueNode:
			if k := len(e.loops); k > 0 && settle(e.loops[k-1]) != settle(st) {
				err = e.problem(n.Position(), "%s: {{break}} or {{continue}} leaves the loop somewhere else than where an iteration starts", st.what())
			}
		case *parse.TemplateNode:
			err = e.problem(n.Pos, "%s: {{template}} cannot be escaped; write its text here", st.what())
		}
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

// branches escapes both branches of an if or with; they must end in the
// same place, or what follows could not be escaped for both.
func (e *escaper) branches(kind string, pos parse.Pos, then, els *parse.ListNode, st State) (State, error) {
	a, err := e.list(then, st)
	if err != nil {
		return nil, err
	}
	b, err := e.list(els, st)
	if err != nil {
		return nil, err
	}
	a, b = settle(a), settle(b)
	if a != b {
		return nil, e.problem(pos, "%s: the branches of this {{%s}} end in different places (%s and %s), so what follows cannot be escaped for both",
			st.what(), kind, describeState(a), describeState(b))
	}
	return a, nil
}

// loop escapes a range: each iteration must end where it starts, since the
// next one starts there.
func (e *escaper) loop(n *parse.RangeNode, st State) (State, error) {
	e.loops = append(e.loops, st)
	body, err := e.list(n.List, st)
	e.loops = e.loops[:len(e.loops)-1]
	if err != nil {
		return nil, err
	}
	body, st = settle(body), settle(st)
	if body != st {
		hint := ""
		if _, ok := st.(jsonState); ok {
			hint = `; insert the whole list as one value instead, e.g. "ids": {{ .params.ids }}`
		}
		return nil, e.problem(n.Pos, "%s: an iteration of this {{range}} ends somewhere else (%s) than it starts (%s)%s",
			st.what(), describeState(body), describeState(st), hint)
	}
	return e.list(n.ElseList, st)
}

// actionStart returns the offset of the {{ that opens the action whose
// pipeline starts at pos.
func (e *escaper) actionStart(pos parse.Pos) int {
	p := min(int(pos), len(e.src))
	if i := strings.LastIndex(e.src[:p], "{{"); i >= 0 {
		return i
	}
	return p
}

// actionText returns the action at pos as written, for messages.
func (e *escaper) actionText(pos parse.Pos) string {
	start := e.actionStart(pos)
	if j := strings.Index(e.src[start:], "}}"); j >= 0 {
		return e.src[start : start+j+2]
	}
	return e.src[start:]
}

func (e *escaper) problem(pos parse.Pos, format string, args ...any) error {
	return &Problem{Offset: e.actionStart(pos), Msg: fmt.Sprintf(format, args...)}
}

func appendEscaper(a *parse.ActionNode, fn string) {
	a.Pipe.Cmds = append(a.Pipe.Cmds, &parse.CommandNode{
		NodeType: parse.NodeCommand,
		Args:     []parse.Node{parse.NewIdentifier(fn).SetTree(nil).SetPos(a.Pos)},
	})
}

// settle returns the state at the end of a branch or loop body for
// comparing it with another: a JSON number or literal that reaches the end
// counts as a complete value, since whatever follows must end it anyway.
func settle(s State) State {
	if j, ok := s.(jsonState); ok && j.pos == jLiteral {
		j.pos = jAfter
		return j
	}
	return s
}

func describeState(s State) string {
	if d, ok := s.(interface{ describe() string }); ok {
		return d.describe()
	}
	return fmt.Sprint(s)
}

// plainState is a context without structure: every value gets the same
// escaper (shell words, header values).
type plainState struct{ fn, name string }

func (s plainState) text(string) (State, int, error) { return s, 0, nil }
func (s plainState) action() (string, State, error)  { return s.fn, s, nil }
func (s plainState) end() error                      { return nil }
func (s plainState) what() string                    { return s.name }
func (s plainState) describe() string                { return s.name }

// jsonPos is what a JSON scanner expects next.
type jsonPos uint8

const (
	jValue   jsonPos = iota // a value (or, right after [, the closing ])
	jKey                    // an object key (or, right after {, the closing })
	jColon                  // the colon after a key
	jAfter                  // a comma or a closing bracket, after a value
	jLiteral                // more of a number, true, false or null
	jString                 // more of a string
	jEscape                 // the character after a backslash in a string
	jHex                    // the hex digits of a \u escape
)

// jsonState follows a JSON document closely enough to tell, at each
// action, whether its value lands inside a string, as a value or as a key.
type jsonState struct {
	stack string // the open containers, innermost last: { or [
	pos   jsonPos
	key   bool  // the string being read is an object key
	hex   uint8 // hex digits still due in a \u escape
}

func (s jsonState) what() string { return "JSON" }

func (s jsonState) describe() string {
	switch s.pos {
	case jValue:
		return "where a value belongs"
	case jKey:
		return "where a key belongs"
	case jColon:
		return "after a key"
	case jAfter:
		return "after a value"
	case jLiteral:
		return "inside a number or literal"
	case jString:
		if s.key {
			return "inside a key"
		}
		return "inside a string"
	}
	return "inside an escape sequence"
}

func (s jsonState) text(t string) (State, int, error) {
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch s.pos {
		case jString:
			switch {
			case c == '\\':
				s.pos = jEscape
			case c == '"':
				s.pos = jAfter
				if s.key {
					s.pos = jColon
				}
				s.key = false
			case c < 0x20:
				return nil, i, fmt.Errorf("a string cannot hold a raw control character such as a line break; write it as \\n")
			}
			continue
		case jEscape:
			switch c {
			case 'u':
				s.pos, s.hex = jHex, 4
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos = jString
			default:
				return nil, i, fmt.Errorf("invalid escape \\%c in a string", c)
			}
			continue
		case jHex:
			if !isHexDigit(c) {
				return nil, i, fmt.Errorf("\\u must be followed by four hex digits")
			}
			if s.hex--; s.hex == 0 {
				s.pos = jString
			}
			continue
		case jLiteral:
			if isLiteralByte(c) {
				continue
			}
			s.pos = jAfter // the literal ended; read c after it
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		top := byte(0)
		if s.stack != "" {
			top = s.stack[len(s.stack)-1]
		}
		// A closing bracket is taken where a value or key is expected too
		// ([], {}, but also [1,]): the structure stays clear, and the
		// rendered document is parsed before it is sent anyway.
		switch s.pos {
		case jValue:
			switch {
			case c == '{':
				s.stack, s.pos = s.stack+"{", jKey
			case c == '[':
				s.stack, s.pos = s.stack+"[", jValue
			case c == '"':
				s.pos, s.key = jString, false
			case c == ']' && top == '[':
				s.stack, s.pos = s.stack[:len(s.stack)-1], jAfter
			case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
				s.pos = jLiteral
			default:
				return nil, i, unexpected(c, "a value")
			}
		case jKey:
			switch c {
			case '"':
				s.pos, s.key = jString, true
			case '}':
				s.stack, s.pos = s.stack[:len(s.stack)-1], jAfter
			default:
				return nil, i, unexpected(c, "an object key in double quotes")
			}
		case jColon:
			if c != ':' {
				return nil, i, unexpected(c, "a colon after the key")
			}
			s.pos = jValue
		case jAfter:
			switch {
			case top == 0:
				return nil, i, fmt.Errorf("unexpected %q after the end of the document", c)
			case c == ',' && top == '{':
				s.pos = jKey
			case c == ',':
				s.pos = jValue
			case (c == '}' && top == '{') || (c == ']' && top == '['):
				s.stack, s.pos = s.stack[:len(s.stack)-1], jAfter
			case top == '{':
				return nil, i, unexpected(c, "a comma or } after the value")
			default:
				return nil, i, unexpected(c, "a comma or ] after the value")
			}
		}
	}
	return s, 0, nil
}

func (s jsonState) action() (string, State, error) {
	switch s.pos {
	case jString:
		return escJSONStr, s, nil
	case jValue:
		s.pos = jAfter
		return escJSONValue, s, nil
	case jKey:
		s.pos = jColon
		return escJSONKey, s, nil
	case jAfter:
		return "", nil, errors.New("it would follow a complete value; a comma is missing, or the value belongs inside a string")
	case jColon:
		return "", nil, errors.New("it would stand between a key and its colon")
	case jLiteral:
		return "", nil, errors.New(`it would run into the number or literal before it; give it a place of its own, e.g. "n": {{ .params.n }}`)
	}
	return "", nil, errors.New("it would follow a backslash escape in a string")
}

func (s jsonState) end() error {
	switch {
	case s.pos == jString || s.pos == jEscape || s.pos == jHex:
		return errors.New("the document ends inside a string")
	case s.stack != "":
		kind := "object"
		if s.stack[len(s.stack)-1] == '[' {
			kind = "array"
		}
		return fmt.Errorf("the document ends before its %s is closed", kind)
	}
	return nil
}

func unexpected(c byte, want string) error {
	return fmt.Errorf("unexpected %q where %s belongs", c, want)
}

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isLiteralByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' || c == '-'
}

// urlPart is the part of a URL the output is in.
type urlPart uint8

const (
	uStart       urlPart = iota // nothing written yet
	uScheme                     // in the scheme
	uSchemeColon                // after scheme:
	uSchemeSlash                // after scheme:/
	uAuthority                  // in the host and port
	uPath
	uQuery
	uFragment
)

// urlState follows a URL from its start, or from its path or query for
// arguments that hold only those.
type urlState struct{ part urlPart }

func (s urlState) what() string { return "a URL" }

func (s urlState) describe() string {
	return [...]string{"at the start", "in the scheme", "in the scheme", "in the scheme", "in the host",
		"in the path", "in the query", "in the fragment"}[s.part]
}

func (s urlState) text(t string) (State, int, error) {
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch s.part {
		case uStart, uScheme:
			s.part = uScheme
			switch c {
			case ':':
				s.part = uSchemeColon
			case '/':
				s.part = uPath
			case '?':
				s.part = uQuery
			case '#':
				s.part = uFragment
			}
		case uSchemeColon, uSchemeSlash:
			switch {
			case c == '/' && s.part == uSchemeColon:
				s.part = uSchemeSlash
			case c == '/':
				s.part = uAuthority
			default:
				s.part = uPath // an opaque URL such as mailto:x
			}
		case uAuthority:
			switch c {
			case '/':
				s.part = uPath
			case '?':
				s.part = uQuery
			case '#':
				s.part = uFragment
			}
		case uPath:
			switch c {
			case '?':
				s.part = uQuery
			case '#':
				s.part = uFragment
			}
		case uQuery:
			if c == '#' {
				s.part = uFragment
			}
		}
	}
	return s, 0, nil
}

func (s urlState) action() (string, State, error) {
	switch s.part {
	case uStart:
		// The value is the URL's start; it may not carry a query or a
		// fragment, so that the text after it is still in the path.
		return escURLStart, urlState{part: uPath}, nil
	case uAuthority:
		return escURLHost, s, nil
	case uPath:
		return escURLPath, s, nil
	case uQuery:
		return escURLQuery, s, nil
	case uFragment:
		return escURLFrag, s, nil
	}
	return "", nil, errors.New("a value in the scheme cannot be escaped; write the scheme out, e.g. http://{{ .target.host }}")
}

func (s urlState) end() error { return nil }

// Raw marks a value an author chose to insert unescaped (`| raw`).
type Raw string

// valueText is how a value prints, unless an author marked it raw.
func valueText(v any) (string, bool) {
	if r, ok := v.(Raw); ok {
		return string(r), true
	}
	return fmt.Sprint(v), false
}

func escapeText(v any, escape func(string) string) string {
	s, raw := valueText(v)
	if raw {
		return s
	}
	return escape(s)
}

// jsonString escapes a value as the content of a JSON string, without the
// quotes around it.
func jsonString(v any) (string, error) {
	s, raw := valueText(v)
	if raw {
		return s, nil
	}
	b, err := marshalText(s)
	if err != nil {
		return "", err
	}
	return string(b[1 : len(b)-1]), nil
}

// jsonKey inserts a value as an object key: always a quoted string.
func jsonKey(v any) (string, error) {
	s, raw := valueText(v)
	if raw {
		return s, nil
	}
	b, err := marshalText(s)
	return string(b), err
}

// jsonValue inserts a value as a JSON literal: a string is quoted, a number
// or boolean stays one, nil is null, and a value that prints as text
// (a duration) is the quoted text it prints, as the author reads it.
func jsonValue(v any) (string, error) {
	switch x := v.(type) {
	case Raw:
		return string(x), nil
	case nil:
		return "null", nil
	case string:
		b, err := marshalText(x)
		return string(b), err
	case json.Marshaler:
	case fmt.Stringer:
		b, err := marshalText(x.String())
		return string(b), err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("insert %v as a JSON value: %w", v, err)
	}
	return string(b), nil
}

// marshalText quotes s as a JSON string. Text that is not UTF-8 would come
// out changed (JSON replaces it), so it is refused rather than sent as
// something else than the value.
func marshalText(s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("insert %q into JSON: it is not valid UTF-8", s)
	}
	return json.Marshal(s)
}

// urlPathSegment escapes a value as one path segment: a slash, ? or # in it
// is escaped, and . or .., which would move out of the segment when the
// server cleans the path, is refused.
func urlPathSegment(v any) (string, error) {
	s, raw := valueText(v)
	if raw {
		return s, nil
	}
	if s == "." || s == ".." {
		return "", fmt.Errorf("insert %q into a URL path: it would leave its path segment", s)
	}
	return url.PathEscape(s), nil
}

// urlHost checks a value inserted into a URL's host and port: a host name,
// an IP address or a port, with nothing that could end the host part.
func urlHost(v any) (string, error) {
	s, raw := valueText(v)
	if raw {
		return s, nil
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(".-_:[]%", r):
		default:
			return "", fmt.Errorf("insert %q into a URL's host: %q cannot be part of a host name or port", s, r)
		}
	}
	return s, nil
}

// urlStart checks a value that begins a URL: an absolute http or https URL
// with a host. Unless it is the whole URL, it may not carry a query or a
// fragment, since the text after it is escaped as path.
func urlStart(v any, whole bool) (string, error) {
	s, raw := valueText(v)
	if raw {
		return s, nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("insert %q as a URL: %w", s, unwrapURLError(err))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", fmt.Errorf("insert %q as a URL: want an http or https URL with a host", s)
	case strings.ContainsAny(s, " \t\r\n"):
		return "", fmt.Errorf("insert %q as a URL: it holds white space", s)
	case !whole && (u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, "?#")):
		return "", fmt.Errorf("insert %q at the start of a URL: text follows it, so it may not have a query or fragment", s)
	}
	return s, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// headerValue refuses a value that would end the header line and start
// another one (or be cut at a NUL).
func headerValue(v any) (string, error) {
	s, _ := valueText(v)
	if err := CheckHeader(s); err != nil {
		return "", fmt.Errorf("insert %q into a header: %w", s, err)
	}
	return s, nil
}

// CheckHeader checks a header value: one line, no NUL byte.
func CheckHeader(s string) error {
	if strings.ContainsAny(s, "\r\n\x00") {
		return errors.New("a header value may not hold a line break or a NUL byte")
	}
	return nil
}

// QuoteWarnings finds actions in a JSON template that build quotes
// themselves (printf "\"%s\"", printf "%q"): the escaper already quotes or
// escapes the value, so such quotes end up inside the string.
func QuoteWarnings(src string, l *parse.ListNode, warn func(off int, msg string)) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			for _, c := range n.Pipe.Cmds {
				if !isPrintf(c) {
					continue
				}
				if f, ok := c.Args[1].(*parse.StringNode); ok && (strings.Contains(f.Text, `"`) || strings.Contains(f.Text, "%q")) {
					e := escaper{src: src}
					warn(e.actionStart(n.Pos), fmt.Sprintf("%s builds quotes itself, but values are JSON-escaped for where they stand, "+
						"so the quotes become part of the value; write the quotes in the template and insert the bare value", e.actionText(n.Pos)))
				}
			}
		case *parse.IfNode:
			QuoteWarnings(src, n.List, warn)
			QuoteWarnings(src, n.ElseList, warn)
		case *parse.RangeNode:
			QuoteWarnings(src, n.List, warn)
			QuoteWarnings(src, n.ElseList, warn)
		case *parse.WithNode:
			QuoteWarnings(src, n.List, warn)
			QuoteWarnings(src, n.ElseList, warn)
		}
	}
}

func isPrintf(c *parse.CommandNode) bool {
	id, ok := c.Args[0].(*parse.IdentifierNode)
	return ok && id.Ident == "printf" && len(c.Args) > 1
}
