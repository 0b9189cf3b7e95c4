package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
	"github.com/runbot/runbot/runbooks/fleet"
)

// Select picks the deployments a glob names and refuses, before anything
// runs, what every deployment would refuse: the deployment param given,
// a glob that does not parse, a param out of its range.
func TestSelect(t *testing.T) {
	t.Parallel()
	rb, problems, err := runbooks.LoadFile("testdata/app-check.yaml")
	require.NoError(t, err)
	require.Empty(t, problems.Errors())
	inv, err := inventory.Load("testdata/inventory.yaml")
	require.NoError(t, err)
	fl := &bind.Fleet{Inventory: inv}
	for _, tc := range []struct {
		name, glob string
		given      map[string]string
		want       []string
		wantErr    string
	}{
		{"a glob", "web-*", nil, []string{"web-a", "web-b", "web-broken"}, ""},
		{"the deployment param given", "", map[string]string{"deployment": "web-a"}, nil, "--param deployment: a fleet run sets it per deployment; leave it out"},
		{"a glob that does not parse", "web-[", nil, nil, `--deployments "web-[": `},
		{"a param out of its pattern", "web-*", map[string]string{"marker": "NOT OK"}, nil, "marker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := fleet.Select(rb, fl, tc.glob, tc.given)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, m := range got {
				names = append(names, m.Deployment)
			}
			require.Subset(t, names, tc.want)
		})
	}
}
