package runbooks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/bind"
)

func loadFleetRunbook(t *testing.T, path string) *runbooks.Runbook {
	t.Helper()
	rb, problems, err := runbooks.LoadFile(path)
	require.NoError(t, err)
	require.Empty(t, problems.Errors())
	return rb
}

// A fleet selection lists the matching deployments by name; one without a
// role the runbook's steps target is listed with the reason, and a host
// param is not mistaken for a role.
func TestSelectDeployments(t *testing.T) {
	t.Parallel()
	inv, err := inventory.Load("testdata/fleet/inventory.yaml")
	require.NoError(t, err)
	rb := loadFleetRunbook(t, "testdata/fleet/app-check.yaml")
	for _, tc := range []struct {
		glob    string
		want    []string
		missing map[string]string
	}{
		{"", []string{"batch-1", "web-a", "web-b", "web-c"}, map[string]string{"batch-1": "deployment batch-1 has no role app, which runbook app-check targets"}},
		{"*", []string{"batch-1", "web-a", "web-b", "web-c"}, map[string]string{"batch-1": "deployment batch-1 has no role app, which runbook app-check targets"}},
		{"web-*", []string{"web-a", "web-b", "web-c"}, nil},
		{"web-[ab]", []string{"web-a", "web-b"}, nil},
		{"batch-1", []string{"batch-1"}, map[string]string{"batch-1": "deployment batch-1 has no role app, which runbook app-check targets"}},
	} {
		got, err := bind.SelectDeployments(rb, inv, tc.glob)
		require.NoError(t, err, tc.glob)
		var names []string
		missing := map[string]string{}
		for _, m := range got {
			names = append(names, m.Deployment)
			if m.Err != nil {
				missing[m.Deployment] = m.Err.Error()
			}
		}
		require.Equal(t, tc.want, names, tc.glob)
		if tc.missing == nil {
			tc.missing = map[string]string{}
		}
		require.Equal(t, tc.missing, missing, tc.glob)
	}
}

func TestSelectDeploymentsRefuses(t *testing.T) {
	t.Parallel()
	inv, err := inventory.Load("testdata/fleet/inventory.yaml")
	require.NoError(t, err)
	rb := loadFleetRunbook(t, "testdata/fleet/app-check.yaml")

	_, err = bind.SelectDeployments(rb, inv, "db-*")
	var none *bind.NoDeploymentsError
	require.ErrorAs(t, err, &none)
	require.EqualError(t, err, `inventory testdata/fleet/inventory.yaml has no deployment matching "db-*" (deployments: batch-1, web-a, web-b, web-c)`)

	_, err = bind.SelectDeployments(rb, inv, "web-[")
	var bad *bind.BadGlobError
	require.ErrorAs(t, err, &bad)
	require.Equal(t, "web-[", bad.Glob)
	require.EqualError(t, err, `deployment glob "web-[": syntax error in pattern`)

	_, err = bind.SelectDeployments(rb, &inventory.Inventory{File: "empty.yaml"}, "")
	require.EqualError(t, err, "inventory empty.yaml has no deployments")
	require.ErrorAs(t, err, &none)

	_, err = bind.SelectDeployments(loadFleetRunbook(t, "testdata/fleet/host-check.yaml"), inv, "")
	require.EqualError(t, err, "runbook host-check has no deployment param: a fleet run sets one per deployment")
}
