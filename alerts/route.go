package alerts

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// Route maps alerts to a runbook. Routes from the configuration are
// tried first, in order, then the runbooks' own triggers.alerts (runbooks
// by name); the first route whose every matcher holds wins.
type Route struct {
	// Match is label name -> exact value, or /regex/ matching the whole
	// value. An absent label has the value "".
	Match map[string]string
	// Runbook is the runbook to run.
	Runbook string
	// Params are templates over .labels and .annotations, e.g.
	// "{{ .labels.deployment }}". A param that renders empty (the alert
	// lacks the label it reads) keeps the alert from running, with the
	// label and the route named: running with the runbook's default would
	// look at something the alert is not about. A route that means a
	// default says so in the template: {{ .labels.x | default "main" }},
	// or default "" to leave the param to the runbook's own default.
	Params map[string]string
}

// route is a compiled Route.
type route struct {
	origin  string
	runbook string
	match   []matcher
	params  map[string]*tmpl.Template
	// book is the runbook, for masking its secret params where the
	// alert's message shows the params.
	book *runbooks.Runbook
}

type matcher struct {
	label string
	value string
	re    *regexp.Regexp
}

func (m matcher) matches(labels map[string]string) bool {
	v := labels[m.label]
	if m.re != nil {
		return m.re.MatchString(v)
	}
	return v == m.value
}

// routed is where an alert goes: a runbook with params, or a problem that
// keeps it from running (a param template that failed).
type routed struct {
	Runbook string
	Params  map[string]string
	// Shown is Params as messages show them: secret ones masked.
	Shown map[string]string
	// Origin names the route, for messages and logs.
	Origin string
	Err    error
}

// compileRoutes compiles the configured routes and the catalog's alert
// triggers. A config route naming an unknown runbook or param, a bad
// regex or template is an error: better refuse to start than drop alerts
// later.
func compileRoutes(cfg []Route, cat *catalog.Catalog) ([]route, error) {
	var out []route
	var errs []error
	for i, r := range cfg {
		origin := fmt.Sprintf("alert route %d (%s)", i+1, r.Runbook)
		rb, err := cat.Get(r.Runbook)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", origin, err))
			continue
		}
		if len(r.Match) == 0 {
			errs = append(errs, fmt.Errorf("%s: match needs at least one label", origin))
		}
		rt := route{origin: origin, runbook: rb.Name, book: rb, params: map[string]*tmpl.Template{}}
		if rt.match, err = compileMatchers(r.Match); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", origin, err))
		}
		for _, name := range slices.Sorted(maps.Keys(r.Params)) {
			if rb.Param(name) == nil {
				errs = append(errs, fmt.Errorf("%s: runbook %s has no param %q%s", origin, rb.Name, name, yamlnode.DidYouMean(name, paramNames(rb))))
				continue
			}
			t, err := tmpl.Parse(name, r.Params[name], false)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: param %s: %w", origin, name, err))
				continue
			}
			rt.params[name] = t
		}
		out = append(out, rt)
	}
	for _, rb := range cat.All() {
		for i, at := range rb.Triggers.Alerts {
			origin := fmt.Sprintf("runbook %s alert trigger %d", rb.Name, i+1)
			ms, err := compileMatchers(at.Match)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", origin, err))
				continue
			}
			out = append(out, route{origin: origin, runbook: rb.Name, book: rb, match: ms, params: at.Params})
		}
	}
	return out, errors.Join(errs...)
}

func paramNames(rb *runbooks.Runbook) []string {
	names := make([]string, len(rb.Params))
	for i, p := range rb.Params {
		names[i] = p.Name
	}
	return names
}

func compileMatchers(match map[string]string) ([]matcher, error) {
	var out []matcher
	for _, label := range slices.Sorted(maps.Keys(match)) {
		v := match[label]
		m := matcher{label: label, value: v}
		if len(v) >= 2 && strings.HasPrefix(v, "/") && strings.HasSuffix(v, "/") {
			re, err := regexp.Compile("^(?:" + v[1:len(v)-1] + ")$")
			if err != nil {
				return nil, fmt.Errorf("match %s: %w", label, err)
			}
			m.re = re
		}
		out = append(out, m)
	}
	return out, nil
}

// routeAlert finds the first route for an alert and renders its params;
// nil means no route matches.
func routeAlert(routes []route, a Alert) *routed {
	for _, r := range routes {
		ok := true
		for _, m := range r.match {
			if !m.matches(a.Labels) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		out := &routed{Runbook: r.runbook, Origin: r.origin, Params: map[string]string{}}
		data := map[string]any{"labels": nonNil(a.Labels), "annotations": nonNil(a.Annotations)}
		for _, name := range slices.Sorted(maps.Keys(r.params)) {
			t := r.params[name]
			v, err := t.Execute(data)
			if err != nil {
				out.Err = errors.Join(out.Err, fmt.Errorf("param %s: %w", name, err))
				continue
			}
			if v = strings.TrimSpace(v); v != "" {
				out.Params[name] = v
				continue
			}
			if !t.Calls("default") {
				out.Err = errors.Join(out.Err, missingLabel(r.origin, name, t, a))
			}
		}
		out.Shown = out.Params
		if r.book != nil {
			out.Shown = r.book.MaskSecrets(out.Params)
		}
		return out
	}
	return nil
}

// missingLabel is the error for a param whose template rendered empty
// and gives no default: it names the labels and annotations the template
// reads that the alert lacks, and the route.
func missingLabel(origin, param string, t *tmpl.Template, a Alert) error {
	var missing []string
	example := ""
	for _, f := range t.Fields() {
		if len(f) != 2 {
			continue
		}
		var have map[string]string
		switch f[0] {
		case "labels":
			have = a.Labels
		case "annotations":
			have = a.Annotations
		default:
			continue
		}
		if strings.TrimSpace(have[f[1]]) == "" {
			missing = append(missing, fmt.Sprintf("%s %q", strings.TrimSuffix(f[0], "s"), f[1]))
			if example == "" {
				example = fmt.Sprintf("{{ .%s.%s | default \"...\" }}", f[0], f[1])
			}
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("param %s: %s renders it empty and gives no default", param, origin)
	}
	return fmt.Errorf("param %s: the alert has no %s, which %s reads for it; to run without it, give the route a default (%s)",
		param, strings.Join(missing, " or "), origin, example)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
