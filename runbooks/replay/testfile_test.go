package replay_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/replay"
)

// TestTestFileProblems: a test file with a misspelt key, or with no test
// case in it, is refused with each problem at its file:line:col and a
// did-you-mean for the key; none reads as a file with nothing to test.
// Each case is a file of testdata/testfiles.
func TestTestFileProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"tests-misspelt_test.yaml", []string{
			`:1:1: test file: tests is required (the list of test cases), and there is none`,
			`:2:1: test file: unknown key "tset" (did you mean "tests"?)`,
		}},
		{"case-key-misspelt_test.yaml", []string{
			`:3:5: tests[0]: unknown key "nmae" (did you mean "name"?)`,
			`:3:5: tests[0]: name is required`,
		}},
		{"expect-key-misspelt_test.yaml", []string{
			`:3:5: test roomy: expect says nothing to check`,
			`:6:7: expect: unknown key "outcom" (did you mean "outcome"?)`,
		}},
		{"empty-tests_test.yaml", []string{`:2:8: tests: at least one test is required`}},
		{"no-tests_test.yaml", []string{`:1:1: test file: tests is required (the list of test cases), and there is none`}},
		{"empty_test.yaml", []string{`:1:1: file is empty`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := "testdata/testfiles/" + tc.file
			tf, problems, err := replay.LoadTestFile(path)
			require.NoError(t, err)
			require.Nil(t, tf, "a test file with problems must not be run")
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = path + w
			}
			require.Equal(t, want, got)
		})
	}
}

// TestSuiteFailsTestFilesWithoutCases: a suite of test files that hold no
// case that can run fails, with their problems, rather than passing with
// no test run.
func TestSuiteFailsTestFilesWithoutCases(t *testing.T) {
	t.Parallel()
	s := &replay.Suite{}
	require.NoError(t, s.Run(t.Context(), []string{"testdata/testfiles"}))
	require.False(t, s.Passed, "a suite that ran nothing because its files are broken must fail")
	require.Empty(t, s.Results)
	require.Contains(t, s.Problems, `testdata/testfiles/tests-misspelt_test.yaml:2:1: test file: unknown key "tset" (did you mean "tests"?)`)
	require.Contains(t, s.Problems, `testdata/testfiles/empty-tests_test.yaml:2:8: tests: at least one test is required`)
	require.Len(t, s.Problems, 9)
}
