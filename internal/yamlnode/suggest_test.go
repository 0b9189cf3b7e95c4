package yamlnode_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/yamlnode"
)

func TestSuggest(t *testing.T) {
	cands := []string{"timeout", "target", "needs", "with", "check"}
	cases := map[string]string{
		"timout": "timeout", "taget": "target", "neds": "needs", "wiht": "with", // a transposition is one edit
		"zzz": "", "deployment": "",
	}
	for word, want := range cases {
		require.Equal(t, want, yamlnode.Suggest(word, cands), word)
	}
	require.Equal(t, ` (did you mean "check"?)`, yamlnode.DidYouMean("chek", cands))
	require.Empty(t, yamlnode.DidYouMean("nothing-like-it", cands))
}

// TestSuggestRealisticTypos: the typos a user makes writing a first
// runbook or its test file each find the name meant, and a word that
// could mean several names, or none, finds nothing.
func TestSuggestRealisticTypos(t *testing.T) {
	runbooks := []string{"gpu-node-health", "host-basics", "http-alive-not-working", "sglang-pd-audit", "sglang-pd-wedge", "systemd-crashloop"}
	testFileKeys := []string{"runbook", "tests"}
	expectKeys := []string{"diagnoses", "findings", "absent_findings", "absent_diagnoses", "remediation", "outcome", "inconclusive"}
	for _, tc := range []struct {
		name, word string
		cands      []string
		want       string
	}{
		{"transposition", "sglang-pd-wegde", runbooks, "sglang-pd-wedge"},
		{"missing character", "sglang-pd-wege", runbooks, "sglang-pd-wedge"},
		{"extra character", "host-bassics", runbooks, "host-basics"},
		{"missing suffix", "gpu-node", runbooks, "gpu-node-health"},
		{"missing last parts", "http-alive", runbooks, "http-alive-not-working"},
		{"missing suffix and a typo", "host-basic", runbooks, "host-basics"},
		{"prefix of several names", "sglang-pd", runbooks, ""},
		{"too short to complete", "gp", runbooks, ""},
		{"a prefix that is not a whole part", "gpu-no", runbooks, ""},
		{"unrelated", "postgres-replication", runbooks, ""},
		{"transposition and a missing letter in a short key", "tset", testFileKeys, "tests"},
		{"singular of a key", "test", testFileKeys, "tests"},
		{"misspelt key", "runbok", testFileKeys, "runbook"},
		{"missing suffix of a key", "absent", expectKeys, ""},
		{"misspelt expectation", "diagnosis", expectKeys, "diagnoses"},
		{"transposed expectation", "outcoem", expectKeys, "outcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, yamlnode.Suggest(tc.word, tc.cands), tc.word)
		})
	}
}
