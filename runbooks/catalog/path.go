package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
)

// LooksLikePath reports whether a runbook argument names a file rather
// than a runbook: runbook names have neither an extension nor a
// directory. An argument that looks like a path is never taken for a
// name, so that a missing file is reported as such, not as an unknown
// runbook named after it.
func LooksLikePath(arg string) bool {
	return strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") ||
		strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator)
}

// LoadPath is runbooks.LoadFile for a runbook file a person named: a file that
// does not exist is reported with a did-you-mean, a runbook file beside it
// of a similar name (or of the same name with its extension), else one of
// names (the runbooks of the catalog) named like the file.
func LoadPath(path string, names []string) (*runbooks.Runbook, yamlnode.Problems, error) {
	if _, err := os.Stat(path); err != nil {
		// The path is in the message already; the stat in front of the
		// reason would only be noise.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, fmt.Errorf("runbook file %s: %w%s", path, err, similarRunbook(path, names))
	}
	return runbooks.LoadFile(path)
}

// similarRunbook is the did-you-mean for a runbook file that does not
// exist, or "".
func similarRunbook(path string, names []string) string {
	dir, base := filepath.Split(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	var files []string
	byStem := map[string]string{}
	entries, _ := os.ReadDir(cmp.Or(dir, "."))
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || IsTestFile(n) || (!strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml")) {
			continue
		}
		s := strings.TrimSuffix(strings.TrimSuffix(n, ".yaml"), ".yml")
		files = append(files, s)
		byStem[s] = n
	}
	if s := yamlnode.Suggest(stem, files); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", filepath.Join(dir, byStem[s]))
	}
	if s := yamlnode.Suggest(stem, names); s != "" {
		return fmt.Sprintf(" (did you mean the runbook %q?)", s)
	}
	return ""
}
