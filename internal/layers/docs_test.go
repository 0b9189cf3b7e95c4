package layers_test

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docFiles are the documents at the repository root whose package paths
// and make targets must exist.
var docFiles = []string{"ARCHITECTURE.md", "CONTRIBUTING.md"}

// TestDocsNameWhatExists keeps ARCHITECTURE.md and CONTRIBUTING.md true
// to the tree: every package path they name in backticks is a package of
// this module, and every `make TARGET` they show is a target of the
// Makefile. A package moved or renamed, or a target dropped, fails here
// until the documents follow.
func TestDocsNameWhatExists(t *testing.T) {
	names := loadDocNames(t)
	for _, doc := range docFiles {
		t.Run(doc, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("..", "..", doc))
			require.NoError(t, err)
			got := checkDocText(string(text), names)
			require.Empty(t, got.problems, "%s names what does not exist:\n%s", doc, strings.Join(got.problems, "\n"))
			// A checker that finds nothing checks nothing.
			require.NotEmpty(t, got.packages, "%s: no package reference found", doc)
			require.NotEmpty(t, got.targets, "%s: no make target found", doc)
		})
	}

	// The checker itself, on the real names: it must reject what does not
	// exist and leave alone what is not a package reference.
	arch, err := os.ReadFile(filepath.Join("..", "..", "ARCHITECTURE.md"))
	require.NoError(t, err)
	cases := []struct {
		name, text string
		// problems are substrings, one per problem expected, in order.
		problems []string
		packages []string
		targets  []string
	}{
		{
			name:     "the document with a bogus target and a bogus package added",
			text:     string(arch) + "\nRun `make nosuchtarget` first; `internal/nosuch` does it.\n",
			problems: []string{"`internal/nosuch`", "make nosuchtarget"},
		},
		{name: "bogus make target", text: "Run `make nosuchtarget` first.", problems: []string{"make nosuchtarget"}},
		{name: "bogus make target in a code block", text: "```sh\nmake nosuchtarget\n```\n", problems: []string{"make nosuchtarget"}},
		{name: "bogus internal package", text: "`internal/nosuch` does it.", problems: []string{"`internal/nosuch`"}},
		{name: "bogus package under a real one", text: "See `runbooks/missing/`.", problems: []string{"`runbooks/missing`"}},
		{name: "bogus top-level path", text: "See `nosuchpkg/x`.", problems: []string{"`nosuchpkg/x`"}},
		{name: "top-level directory that is no package", text: "See `docs`.", problems: []string{"`docs`"}},
		{name: "bogus package in a go command", text: "```sh\ngo test ./nosuch -run TestX\n```\n", problems: []string{"./nosuch"}},
		{name: "bogus package in an inline go command", text: "Run `go vet ./runbooks/missing/...`.", problems: []string{"./runbooks/missing"}},
		{
			name: "real names, and tokens that are no package reference",
			text: "`dispatch`, `chat/outbox/`, `internal/redact`, `github.com/runbot/runbot/store`, " +
				"`testing/synctest`, `sglang-pd-wedge`, `chat.Chat`, `runbooks/builtin/*.yaml`, " +
				"`config_edit`, `make test`, `make demo ARGS=--yes`; make sure of it.\n" +
				"```sh\ngo test -count=1 ./cmd/sglang-sim ./...\nmake matrix-full\n```\n" +
				"A span over two lines: `go test\n./timeline`.\n",
			packages: []string{"chat/outbox", "cmd/sglang-sim", "dispatch", "internal/redact", "store", "timeline"},
			targets:  []string{"demo", "matrix-full", "test"},
		},
	}
	for _, c := range cases {
		t.Run("checker/"+c.name, func(t *testing.T) {
			got := checkDocText(c.text, names)
			require.Len(t, got.problems, len(c.problems), "problems: %q", got.problems)
			for i, want := range c.problems {
				require.Contains(t, got.problems[i], want)
			}
			if c.packages != nil || c.targets != nil {
				require.Equal(t, c.packages, got.packages)
				require.Equal(t, c.targets, got.targets)
			}
		})
	}
}

// docNames is what exists: what the documents may name.
type docNames struct {
	packages map[string]bool // this module's packages, relative: "chat/outbox"
	std      map[string]bool // standard library packages: "testing/synctest"
	topDirs  map[string]bool // the repository's top-level directories
	targets  map[string]bool // the Makefile's targets
}

// docResult is what a document names, and what of it does not exist.
type docResult struct {
	packages, targets []string // sorted, each once
	problems          []string
}

var (
	// docFence opens or closes a fenced code block.
	docFence = regexp.MustCompile("^\\s*(```|~~~)")
	// docCodeSpan is an inline code span; it may run over a line break.
	docCodeSpan = regexp.MustCompile("`([^`]+)`")
	// docPath is a token written like a package path of this module:
	// lower-case letters, digits, '_', '-' (cmd/sglang-sim) and '/'.
	docPath = regexp.MustCompile(`^[a-z0-9_][a-z0-9_/-]*$`)
	// docMake is a make command and its target.
	docMake = regexp.MustCompile(`\bmake\s+([a-z][a-z0-9-]*)`)
	// docGoCommand is a go command; its ./ arguments are packages.
	docGoCommand = regexp.MustCompile(`\bgo\s+(?:build|doc|generate|install|list|run|test|vet)\b[^\n]*`)
	docDotSlash  = regexp.MustCompile(`(?:^|\s)\./([^\s'"]+)`)
	// docMakefileTarget is a rule in the Makefile (not a := assignment).
	docMakefileTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):(?:[^=]|$)`)
)

// loadDocNames reads what exists: the module's packages (with the e2e
// build tag, so test/e2e counts) and the standard library's from go list,
// the top-level directories, and the Makefile's targets.
func loadDocNames(t *testing.T) docNames {
	t.Helper()
	n := docNames{packages: map[string]bool{}, std: map[string]bool{}, topDirs: map[string]bool{}, targets: map[string]bool{}}
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-e", "-tags", "e2e", mod+"...", "std")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, mod); ok {
			n.packages[rel] = true
		} else {
			n.std[p] = true
		}
	}
	require.True(t, n.packages["dispatch"], "go list found no packages of the module:\n%s", out)
	entries, err := os.ReadDir(filepath.Join("..", ".."))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			n.topDirs[e.Name()] = true
		}
	}
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	for _, m := range docMakefileTarget.FindAllStringSubmatch(string(makefile), -1) {
		n.targets[m[1]] = true
	}
	require.True(t, n.targets["test"], "no test target found in the Makefile")
	return n
}

// checkDocText finds the package paths and make targets a Markdown text
// names and reports each that does not exist. Package paths are read from
// inline code spans (`dispatch`, `chat/outbox/`, `./runbooks`, the full
// import path) and from the ./ arguments of go commands in code; make
// targets from `make TARGET` in code (prose such as "make sure" is not a
// command).
//
// A code span is a package reference when it names one of the module's
// packages, when its first element is a top-level directory of the
// repository (`runbooks/missing`, `docs`), or when it is a path with a
// slash that is not a standard library package (`nosuchpkg/x`, but not
// `testing/synctest`). Every package reference must be a package; other
// spans (`sglang-pd-wedge`, `chat.Chat`, `runbooks/builtin/*.yaml`) are
// not references.
func checkDocText(text string, n docNames) docResult {
	var prose, code []string
	fenced := false
	var block strings.Builder
	for line := range strings.Lines(text) {
		if docFence.MatchString(line) {
			if fenced {
				code = append(code, block.String())
				block.Reset()
			}
			fenced = !fenced
			continue
		}
		if fenced {
			block.WriteString(line)
		} else {
			prose = append(prose, line)
		}
	}
	if fenced {
		code = append(code, block.String())
	}
	var spans []string
	for _, m := range docCodeSpan.FindAllStringSubmatch(strings.Join(prose, ""), -1) {
		// A span over a line break reads as one line, as Markdown shows it.
		spans = append(spans, strings.ReplaceAll(m[1], "\n", " "))
	}
	code = append(code, spans...)

	packages, targets := map[string]bool{}, map[string]bool{}
	var res docResult
	problem := func(format string, args ...any) {
		res.problems = append(res.problems, fmt.Sprintf(format, args...))
	}
	for _, s := range spans {
		tok := docNormalize(s)
		if !docPath.MatchString(tok) {
			continue
		}
		first, _, slash := strings.Cut(tok, "/")
		switch {
		case n.packages[tok]:
			packages[tok] = true
		case n.topDirs[first] || (slash && !n.std[tok]):
			problem("`%s` is not a package of this module (go list -tags e2e %s...)", tok, mod)
		}
	}
	for _, c := range code {
		for _, cmd := range docGoCommand.FindAllString(c, -1) {
			for _, m := range docDotSlash.FindAllStringSubmatch(cmd, -1) {
				tok := docNormalize("./" + m[1])
				if tok == "" || tok == "..." || !docPath.MatchString(tok) {
					continue
				}
				if n.packages[tok] {
					packages[tok] = true
				} else {
					problem("%q runs ./%s, which is not a package of this module", strings.TrimSpace(cmd), tok)
				}
			}
		}
		for _, m := range docMake.FindAllStringSubmatch(c, -1) {
			if n.targets[m[1]] {
				targets[m[1]] = true
			} else {
				problem("make %s: the Makefile has no target %s", m[1], m[1])
			}
		}
	}
	res.packages = slices.Sorted(maps.Keys(packages))
	res.targets = slices.Sorted(maps.Keys(targets))
	return res
}

// docNormalize turns the ways a package is written into its path relative
// to the module: "./runbooks/..." and "runbooks/" into "runbooks", the
// full import path into the relative one.
func docNormalize(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), mod)
	s = strings.TrimPrefix(s, "./")
	s = strings.TrimSuffix(s, "/...")
	return strings.TrimSuffix(s, "/")
}
