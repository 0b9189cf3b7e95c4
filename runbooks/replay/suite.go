package replay

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
)

// Suite is a run of runbook test files, as `runbot test` makes one: the
// result of every case, the files that could not be read, and what the
// tested directories leave untested. It is also the JSON document of
// `runbot test --format json`.
type Suite struct {
	Passed  bool         `json:"passed"`
	Failed  int          `json:"failed"`
	Results []TestResult `json:"results"`
	// Problems are test files that could not be read, as file:line:col.
	Problems []string `json:"problems"`
	// Warnings name the runbooks in the directories tested that have no
	// test case, and the diagnoses that no case expects.
	Warnings []string `json:"warnings"`

	// RunbookDirs are searched, after the built-ins, for a runbook that
	// is not beside its test file.
	RunbookDirs []string `json:"-"`
	// Started, when set, is told the name of each case before it runs,
	// and Finished its result after.
	Started  func(name string)                 `json:"-"`
	Finished func(name string, res TestResult) `json:"-"`

	// expected holds, per runbook name, the diagnoses its cases expect.
	expected map[string][]string
}

// Run runs the test files in paths (files as given, directories
// searched), then warns about what the directories leave untested. It is
// an error when a path cannot be read or holds no test file; a case that
// fails, and a test file with problems, are in the suite's results.
func (s *Suite) Run(ctx context.Context, paths []string) error {
	files, err := TestFiles(paths)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no test files (*%s) in %s", catalog.TestFileSuffix, strings.Join(paths, ", "))
	}
	s.Results, s.Problems, s.Warnings, s.expected = []TestResult{}, []string{}, []string{}, map[string][]string{}
	for _, f := range files {
		s.runFile(ctx, f)
	}
	s.coverage(paths)
	s.Passed = s.Failed == 0 && len(s.Problems) == 0
	return nil
}

// runFile runs one test file's cases.
func (s *Suite) runFile(ctx context.Context, path string) {
	tf, problems, err := LoadTestFile(path)
	if err != nil {
		s.Problems = append(s.Problems, err.Error())
		return
	}
	for _, p := range problems {
		s.Problems = append(s.Problems, p.String())
	}
	if tf == nil {
		return
	}
	rb, err := FindRunbook(tf, s.RunbookDirs...)
	if err != nil {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %v", path, err))
		return
	}
	if _, ok := s.expected[rb.Name]; !ok {
		s.expected[rb.Name] = []string{}
	}
	for _, c := range tf.Cases {
		s.expected[rb.Name] = append(s.expected[rb.Name], c.Expect.Diagnoses...)
		name := rb.Name + "/" + c.Name
		if s.Started != nil {
			s.Started(name)
		}
		res := RunTest(ctx, rb, tf, c)
		s.Results = append(s.Results, res)
		if !res.Passed {
			s.Failed++
		}
		if s.Finished != nil {
			s.Finished(name, res)
		}
	}
}

// coverage warns about runbooks in the tested directories that no test
// file tests, and about diagnoses no case expects: a shipped runbook is
// to have a recorded case for each diagnosis it can give.
func (s *Suite) coverage(paths []string) {
	for _, path := range paths {
		if st, err := os.Stat(path); err != nil || !st.IsDir() {
			continue
		}
		files, err := catalog.Files(path)
		if err != nil {
			continue
		}
		for _, f := range files {
			rb, _, err := runbooks.LoadFile(f)
			if err != nil || rb == nil {
				continue // lint's business
			}
			want, tested := s.expected[rb.Name]
			if !tested {
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s: runbook %s has no test cases (%s)", f, rb.Name, rb.Name+catalog.TestFileSuffix))
				continue
			}
			for _, d := range rb.Diagnoses {
				if !slices.Contains(want, d.ID) {
					s.Warnings = append(s.Warnings, fmt.Sprintf("%s: diagnosis %s of runbook %s is expected by no test case", f, d.ID, rb.Name))
				}
			}
		}
	}
}

// FindRunbook finds the runbook a test file names: the file NAME.yaml
// beside the test file (the runbook under test, as it is on disk), else
// one in dirs or a built-in of that name.
func FindRunbook(tf *TestFile, dirs ...string) (*runbooks.Runbook, error) {
	beside := filepath.Join(filepath.Dir(tf.Path), tf.Runbook+".yaml")
	if _, err := os.Stat(beside); err == nil {
		rb, problems, err := runbooks.LoadFile(beside)
		if err != nil {
			return nil, err
		}
		if rb == nil {
			return nil, fmt.Errorf("runbook does not load:\n%s", problemLines(problems))
		}
		return rb, nil
	}
	c, problems, err := catalog.Load(dirs...)
	if err != nil {
		return nil, err
	}
	// Another runbook's problems are lint's business; only the one under
	// test must load.
	rb, err := c.Get(tf.Runbook)
	if err != nil && len(problems.Errors()) > 0 {
		return nil, fmt.Errorf("%w; runbooks that do not load:\n%s", err, problemLines(problems))
	}
	return rb, err
}

func problemLines(ps yamlnode.Problems) string {
	var lines []string
	for _, p := range ps.Errors() {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

// TestFiles lists the test files in paths (files as given, directories
// searched, leaving out testdata, which holds recordings).
func TestFiles(paths []string) ([]string, error) {
	var files []string
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("read tests: %w", err)
		}
		if !st.IsDir() {
			files = append(files, path)
			continue
		}
		err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" && p != path {
				return filepath.SkipDir
			}
			if !d.IsDir() && catalog.IsTestFile(p) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read tests in %s: %w", path, err)
		}
	}
	return files, nil
}
