package runbooks_test

import (
	"testing"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/stretchr/testify/require"
)

func TestGroupsAuthorized(t *testing.T) {
	g := remediation.Groups{"sre-oncall": {"alice", "bob"}}
	approvers := []string{"@sre-oncall", "dave", "group:db"}
	cases := map[string]bool{"alice": true, "bob": true, "dave": true, "mallory": false, "sre-oncall": false, "": false}
	for user, want := range cases {
		require.Equal(t, want, g.Authorized(approvers, user), user)
	}
}
