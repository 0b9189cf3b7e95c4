package inventory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/inventory"
)

func TestBrokenInventoryReportsEveryProblem(t *testing.T) {
	_, err := inventory.Load("testdata/broken.yaml")
	require.Error(t, err)
	want := `testdata/broken.yaml:3:5: host gpu-1: unknown key "adress" (did you mean "address"?)
testdata/broken.yaml:4:11: host gpu-1.port must be 1-65535, got 99999
testdata/broken.yaml:5:16: host gpu-1.transport must be ssh or local, got "telnet"
testdata/broken.yaml:9:3: host gpu-1b: jump host "bastian" is not in the inventory (did you mean "bastion"?)
testdata/broken.yaml:12:29: host gpu-1b.service_manager.type must be systemd or command, got "supervisord"
testdata/broken.yaml:15:29: host gpu-1c.service_manager.type dbus is not supported: runbot manages units with systemctl (type systemd, the default), locally or over SSH
testdata/broken.yaml:19:15: unknown host "gpu-2" (did you mean "gpu-1"?)
testdata/broken.yaml:19:34: role dsv4.decode.url must be an http(s) URL, got "not a url"
testdata/broken.yaml:20:7: role dsv4.prefill: host is required
testdata/broken.yaml:21:3: deployment empty has no roles`
	require.Equal(t, want, err.Error())
}

func TestGoodInventory(t *testing.T) {
	inv, err := inventory.Load("testdata/good.yaml")
	require.NoError(t, err)
	dep, err := inv.Deployment("dsv4")
	require.NoError(t, err)
	decode, err := dep.Role("decode")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:30200/metrics", decode.MetricsURL, "metrics default to the role's URL")
	h, err := inv.Host("gpu-1")
	require.NoError(t, err)
	require.Equal(t, "bastion", h.Jump)
	require.Equal(t, 22, h.Port)
	require.Equal(t, "systemd", h.Services.Type)

	_, err = inv.Deployment("dsv5")
	require.EqualError(t, err, `unknown deployment "dsv5" in inventory testdata/good.yaml (known: dsv4)`)
	_, err = dep.Role("prefill")
	require.EqualError(t, err, `deployment "dsv4" has no role "prefill" (roles: decode, router)`)
}

// TestInventorySyntaxErrorNamesItsLine: a mis-indented key is reported on
// its own line, not at the top of the file.
func TestInventorySyntaxErrorNamesItsLine(t *testing.T) {
	_, err := inventory.Load("testdata/bad-yaml.yaml")
	require.Error(t, err)
	require.Equal(t, `testdata/bad-yaml.yaml:5:4: invalid YAML: did not find expected key`, err.Error())
}
