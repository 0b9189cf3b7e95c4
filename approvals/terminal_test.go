package approvals_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/approvals"
	"github.com/runbot/runbot/runbooks/remediation"
)

// --group NAME=user1,user2 defines an approver group; a name given twice
// adds members, and a spec without a name or members is refused.
func TestParseGroups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		specs   []string
		want    remediation.Groups
		wantErr string
	}{
		{"none", nil, remediation.Groups{}, ""},
		{"two groups, one given twice", []string{"oncall=alice,bob", "db=carol", "oncall=dave"},
			remediation.Groups{"oncall": {"alice", "bob", "dave"}, "db": {"carol"}}, ""},
		{"no members", []string{"oncall="}, nil, `--group "oncall=": want NAME=user1,user2`},
		{"no name", []string{"=alice"}, nil, `--group "=alice": want NAME=user1,user2`},
		{"no equals sign", []string{"oncall"}, nil, `--group "oncall": want NAME=user1,user2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := approvals.ParseGroups(tc.specs)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
