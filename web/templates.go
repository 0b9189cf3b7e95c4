package web

import (
	_ "embed"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

var (
	//go:embed assets/pages.html
	pagesHTML string
	//go:embed assets/site.css
	pageCSS string
	//go:embed assets/copy.js
	pageJS string
)

// pages are the site's templates, parsed once: a template error is a bug
// that fails at start (and in every test), never on a request.
var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"css":    func() template.CSS { return template.CSS(pageCSS) },
	"js":     func() template.JS { return template.JS(pageJS) },
	"stamp":  stamp,
	"clock":  func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"took":   took,
	"ms":     func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"words":  func(s any) string { return strings.ReplaceAll(toString(s), "_", " ") },
	"status": statusClass,
	"pretty": pretty,
	"diff":   diffLines,
	"link":   withLink,
	"paramText": func(p map[string]string) string {
		return paramText(p)
	},
	"sameHash": func(p store.Plan, hash string) bool { return p.Hash == hash },
	"rollback": func(b *remediation.PlanBody) string {
		if b == nil || len(b.Actions) == 0 {
			return ""
		}
		return b.RollbackPlan()
	},
}).Parse(pagesHTML))

// toString shows a string-kinded value (a status, a severity) as text.
func toString(v any) string { return fmt.Sprint(v) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func took(from, to time.Time) string {
	if from.IsZero() || to.IsZero() {
		return "–"
	}
	return to.Sub(from).Round(time.Millisecond).String()
}

// statusClass is the CSS class that colours a status, outcome, severity
// or state; the text beside it always says the same in words, so colour
// is never the only cue.
func statusClass(v any) string {
	switch toString(v) {
	case "ok", "done", "approve", "not_needed", "rerun":
		return "s-ok"
	case "critical", "error", "failed", "deny", "denied", "rollback_failed", "rerun_failed", "timeout", "interrupted":
		return "s-bad"
	case "warning", "inconclusive", "rolled_back", "expired", "superseded", "skipped":
		return "s-warn"
	}
	return "s-info"
}

// diffLine is one line of a unified diff with its kind, for colour.
type diffLine struct {
	Kind string
	Text string
}

func diffLines(d string) []diffLine {
	var out []diffLine
	for _, l := range strings.Split(strings.TrimRight(d, "\n"), "\n") {
		k := ""
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			k = "d-file"
		case strings.HasPrefix(l, "@@"):
			k = "d-hunk"
		case strings.HasPrefix(l, "+"):
			k = "d-add"
		case strings.HasPrefix(l, "-"):
			k = "d-del"
		}
		out = append(out, diffLine{Kind: k, Text: l})
	}
	return out
}
