package argspec

// Escape names where the values a template inserts into an argument land,
// and so how each one is escaped: the way html/template escapes by context,
// a value must never change the structure of the text around it.
type Escape string

const (
	// EscapeNone inserts values as text/template prints them.
	EscapeNone Escape = "none"
	// EscapeShell shell-quotes every value; a Shell argument has it without
	// declaring it.
	EscapeShell Escape = "shell"
	// EscapeJSON escapes values for where they land in a JSON document:
	// inside a string literal as string content, in a value position as a
	// JSON literal (a string is quoted, a number stays a number), in a key
	// position as a quoted string. The result must be valid JSON. A
	// template that does not start with { or [ is not JSON, and its values
	// are inserted as they are.
	EscapeJSON Escape = "json"
	// EscapeURL is an absolute URL: a value at its very start must be an
	// http or https URL, one in the host part a host name, one in the path
	// a path segment, one in the query or fragment a query component.
	EscapeURL Escape = "url"
	// EscapeURLPath is a URL path, optionally with a query and fragment:
	// every value in the path is escaped as one path segment (it cannot add
	// a slash, a ? or a #), every value after ? or # as a query component.
	EscapeURLPath Escape = "url_path"
	// EscapeURLQuery is a URL query string: every value is escaped as a
	// query component.
	EscapeURLQuery Escape = "url_query"
	// EscapeHeader is an HTTP header value: a value, and the whole result,
	// may not hold a line break or a NUL byte.
	EscapeHeader Escape = "header"
)

// Escapes lists every escaping context, for docs and tests.
var Escapes = []Escape{EscapeNone, EscapeShell, EscapeJSON, EscapeURL, EscapeURLPath, EscapeURLQuery, EscapeHeader}

// EscapeContext returns the escaping context of the argument's template
// values: Escape when the spec declares one, shell for a Shell argument,
// none otherwise.
func (a Arg) EscapeContext() Escape {
	switch {
	case a.Escape != "":
		return a.Escape
	case a.Type == Shell:
		return EscapeShell
	}
	return EscapeNone
}

// Describe says in a few words how template values are escaped in e, for
// the reference docs; it is empty for EscapeNone.
func (e Escape) Describe() string {
	switch e {
	case EscapeShell:
		return "template values are shell-quoted"
	case EscapeJSON:
		return "in a JSON body, template values are JSON-escaped for where they stand (string content, value or key) and the result must be valid JSON"
	case EscapeURL:
		return "template values are escaped for the part of the URL they land in (host, path segment, query component)"
	case EscapeURLPath:
		return "template values are escaped as one path segment, or as a query component after ?"
	case EscapeURLQuery:
		return "template values are escaped as query components"
	case EscapeHeader:
		return "template values may not hold line breaks or NUL bytes"
	}
	return ""
}
