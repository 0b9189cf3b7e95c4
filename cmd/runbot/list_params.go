package main

import (
	"fmt"
	"strings"

	"github.com/runbot/runbot/runbooks"
)

// paramsLine describes a runbook's params in one line for `runbot list`:
// each name with what a caller must know to pass it — required or its
// default, its type when not a string, its range or choices — so that
// nobody has to open the YAML to run a runbook from chat.
func paramsLine(rb *runbooks.Runbook) string {
	if len(rb.Params) == 0 {
		return "params: none"
	}
	parts := make([]string, 0, len(rb.Params))
	for _, p := range rb.Params {
		s := p.Name
		switch {
		case p.Required:
			s += " (required)"
		case p.HasDef && p.Default == "":
			s += `=""`
		case p.HasDef:
			s += "=" + p.Default
		}
		var notes []string
		if p.Type != runbooks.ParamString {
			notes = append(notes, string(p.Type))
		}
		if p.Type == runbooks.ParamEnum && len(p.Values) > 0 {
			notes = append(notes, strings.Join(p.Values, "|"))
		}
		if p.Min != nil || p.Max != nil {
			notes = append(notes, fmt.Sprintf("%s..%s", bound(p.Min), bound(p.Max)))
		}
		if len(notes) > 0 {
			s += " [" + strings.Join(notes, ", ") + "]"
		}
		parts = append(parts, s)
	}
	return "params: " + strings.Join(parts, ", ")
}

func bound(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
