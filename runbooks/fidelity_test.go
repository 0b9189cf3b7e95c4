package runbooks_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
)

// fidelityRunbooks are the shipped runbooks whose SGLang surface the
// simulator's fidelity audit (sim/FIDELITY.md) must cover.
var fidelityRunbooks = []string{"sglang-pd-wedge", "sglang-pd-audit"}

// TestFidelityAuditCoversRunbooks requires every piece of SGLang's surface the
// shipped PD runbooks read to have a row in sim/FIDELITY.md: each `sglang:`
// metric name (every alias of a|b, without any {label} selector), each
// http_probe path, each flag a flag step checks, and each log_progress
// progress regex. The list is computed from the runbooks, so a step added
// later fails here until the audit names what it reads. Items are looked for
// in backticks, as the audit's tables write them, so `/health` is not
// satisfied by `/health_generate`.
func TestFidelityAuditCoversRunbooks(t *testing.T) {
	cat, _, err := catalog.Load()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join("..", "sim", "FIDELITY.md"))
	require.NoError(t, err, "the fidelity audit sim/FIDELITY.md is missing")
	doc := string(raw)

	var items []fidelityItem
	for _, name := range fidelityRunbooks {
		rb, err := cat.Get(name)
		require.NoError(t, err)
		items = append(items, fidelityItems(rb)...)
	}
	// Every kind must have been found at least once, or the collection itself
	// has gone stale (e.g. a check or argument was renamed).
	kinds := map[string]bool{}
	for _, it := range items {
		kinds[it.kind] = true
	}
	for _, k := range []string{"metric", "path", "flag", "progress"} {
		require.True(t, kinds[k], "no %s found in %v: has the runbook's shape changed?", k, fidelityRunbooks)
	}

	var missing []string
	for _, it := range items {
		if !strings.Contains(doc, "`"+it.value+"`") {
			missing = append(missing, it.String())
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	require.Empty(t, missing, "sim/FIDELITY.md has no row naming these (in backticks); add one for each")
}

type fidelityItem struct {
	kind, value, where string
}

func (i fidelityItem) String() string { return i.kind + " " + i.value + " (" + i.where + ")" }

// fidelityItems collects what one runbook's steps read from SGLang.
func fidelityItems(rb *runbooks.Runbook) []fidelityItem {
	var out []fidelityItem
	add := func(kind, value string, s *runbooks.Step) {
		value = strings.TrimSpace(value)
		if value == "" || strings.Contains(value, "{{") {
			return // empty, or a template only known at run time
		}
		out = append(out, fidelityItem{kind: kind, value: value, where: rb.Name + "/" + s.ID})
	}
	for _, s := range rb.Steps {
		switch s.Check {
		case "metrics_sample":
			for _, m := range argStrings(s, "metrics") {
				for _, alias := range strings.Split(m, "|") {
					alias = strings.TrimSpace(alias)
					if i := strings.IndexByte(alias, '{'); i >= 0 {
						alias = alias[:i] // a label selector, e.g. {mode="decode"}
					}
					if strings.HasPrefix(alias, "sglang:") {
						add("metric", alias, s)
					}
				}
			}
		case "http_probe":
			for _, p := range argStrings(s, "path") {
				if i := strings.IndexAny(p, "?#"); i >= 0 {
					p = p[:i]
				}
				add("path", "/"+strings.TrimLeft(p, "/"), s)
			}
		case "flag":
			for _, f := range argStrings(s, "flag") {
				add("flag", f, s)
			}
		case "log_progress":
			for _, p := range argStrings(s, "progress") {
				add("progress", p, s)
			}
		}
	}
	return out
}

// argStrings returns the string leaves of one `with:` argument: the string
// itself, or the strings of a list.
func argStrings(s *runbooks.Step, name string) []string {
	a, ok := s.With[name]
	if !ok || a == nil {
		return nil
	}
	if a.IsConst {
		if out := stringLeaves(a.Const); out != nil {
			return out
		}
	}
	return stringLeaves(a.Raw)
}

func stringLeaves(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
