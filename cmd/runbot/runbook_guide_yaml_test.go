package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/runbooks"
)

// guideYAMLBlock is one ```yaml block of the guide: its info string, the
// line its body starts on and the body.
type guideYAMLBlock struct {
	info string
	line int
	body string
}

// guideYAMLBlocks returns every fenced block of path whose info string
// starts with "yaml".
func guideYAMLBlocks(t *testing.T, path string) []guideYAMLBlock {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read only
	var out []guideYAMLBlock
	var cur *guideYAMLBlock
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```yaml"):
			cur = &guideYAMLBlock{info: strings.TrimPrefix(line, "```"), line: n + 1}
			body.Reset()
		case cur != nil && line == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a ```yaml block is not closed", path)
	return out
}

// fragmentSections are the runbook sections a guide fragment may show
// alone; the test writes each into the worked example and lints the
// result, so a fragment is checked against a real runbook.
var fragmentSections = []string{"params", "triggers", "findings", "diagnoses", "remediations"}

// mergeSection writes a fragment's section into the runbook: a list
// section's items replace the items with the same id and add the rest, a
// map section's keys replace or add keys.
func mergeSection(rb map[string]any, key string, frag any) error {
	switch f := frag.(type) {
	case []any:
		base, _ := rb[key].([]any)
		for _, item := range f {
			id := fmt.Sprint(item.(map[string]any)["id"])
			i := slices.IndexFunc(base, func(b any) bool { return fmt.Sprint(b.(map[string]any)["id"]) == id })
			if i >= 0 {
				base[i] = item
			} else {
				base = append(base, item)
			}
		}
		rb[key] = base
	case map[string]any:
		base, _ := rb[key].(map[string]any)
		if base == nil {
			base = map[string]any{}
		}
		for k, v := range f {
			base[k] = v
		}
		rb[key] = base
	default:
		return fmt.Errorf("section %s is neither a list nor a map", key)
	}
	return nil
}

// TestRunbookGuideYAML: every YAML example of docs/runbooks.md is valid as
// written. A whole runbook (name and steps) lints clean; a fragment of
// params, triggers, findings, diagnoses or remediations is written into
// the worked example (replacing what it redefines) and the result lints
// clean. A user copies these blocks, and a key the guide shows that the
// loader refuses (as `rules:` once was) is a bug in the guide. What is
// not a runbook is named and left out: the outline of the file structure
// (```yaml outline), the test files, a steps fragment of a deployment
// runbook and a bare expression.
func TestRunbookGuideYAML(t *testing.T) {
	const guide = "../../docs/runbooks.md"
	blocks := guideYAMLBlocks(t, guide)
	var example map[string]any
	for _, b := range blocks {
		if b.info == "yaml runbook-example" {
			require.NoError(t, yaml.Unmarshal([]byte(b.body), &example))
		}
	}
	require.NotNil(t, example, "docs/runbooks.md has a ```yaml runbook-example block")

	checked, listRules := 0, false
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d (```%s)", guide, b.line, b.info)
		if b.info == "yaml outline" {
			continue
		}
		var doc any
		require.NoError(t, yaml.Unmarshal([]byte(b.body), &doc), where)
		top, isMap := doc.(map[string]any)
		switch {
		case !isMap:
			// A test case of a test file, shown alone.
			require.IsType(t, []any{}, doc, where)
			continue
		case top["runbook"] != nil && top["tests"] != nil:
			continue // a test file
		case top["name"] != nil && top["steps"] != nil:
			_, problems := runbooks.Parse(where, []byte(b.body))
			require.Empty(t, problems, "%s: a whole runbook of the guide must lint clean", where)
			checked++
			continue
		case len(top) == 1 && top["when"] != nil:
			continue // an expression over a metrics step, shown alone
		case len(top) == 1 && top["steps"] != nil:
			continue // the steps of a deployment runbook, shown alone
		}
		// A fragment: into a fresh copy of the worked example.
		var rb map[string]any
		src, err := yaml.Marshal(example)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(src, &rb))
		for key, v := range top {
			require.Contains(t, fragmentSections, key, "%s: a fragment of the guide shows a section the test cannot check", where)
			require.NoError(t, mergeSection(rb, key, v), where)
			if key == "diagnoses" {
				for _, d := range v.([]any) {
					if _, ok := d.(map[string]any)["remediate"].([]any); ok {
						listRules = true
					}
				}
			}
		}
		merged, err := yaml.Marshal(rb)
		require.NoError(t, err)
		_, problems := runbooks.Parse(where, merged)
		require.Empty(t, problems, "%s: this fragment, written into the worked example, must lint clean:\n%s", where, merged)
		checked++
	}
	require.Greater(t, checked, 5, "the guide's YAML examples are checked")
	require.True(t, listRules, "the guide shows remediate: as a list of rules in a checked block, not only in a comment")
}
