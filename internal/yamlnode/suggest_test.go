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
