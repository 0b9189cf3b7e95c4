package alerts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/catalog"
)

// TestLibraryAlertTriggers: the alerts the library runbooks declare route
// to them with their params filled from the alert, and the params
// resolve (an alert route that fills a param the runbook then refuses
// would page nobody).
func TestLibraryAlertTriggers(t *testing.T) {
	t.Parallel()
	cat, problems, err := catalog.Load()
	require.NoError(t, err)
	require.Empty(t, problems)
	routes, err := compileRoutes(nil, cat)
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		labels, annotations map[string]string
		runbook             string
		params              map[string]string
	}{
		"an HTTP service alive but not working": {
			labels:      map[string]string{"alertname": "HTTPAliveNotWorking", "host": "web-01"},
			annotations: map[string]string{"health_url": "http://127.0.0.1:8000/health", "url": "http://127.0.0.1:8000/v1/models"},
			runbook:     "http-alive-not-working",
			params:      map[string]string{"host": "web-01", "health_url": "http://127.0.0.1:8000/health", "url": "http://127.0.0.1:8000/v1/models"},
		},
		"a failed unit from node_exporter's systemd collector": {
			labels:  map[string]string{"alertname": "SystemdUnitFailed", "host": "gpu-node-07", "name": "sglang-dsv4-decode.service", "state": "failed"},
			runbook: "systemd-crashloop",
			params:  map[string]string{"host": "gpu-node-07", "unit": "sglang-dsv4-decode.service"},
		},
		"a flapping unit": {
			labels:  map[string]string{"alertname": "SystemdUnitFlapping", "host": "gpu-node-07", "name": "nginx.service"},
			runbook: "systemd-crashloop",
			params:  map[string]string{"host": "gpu-node-07", "unit": "nginx.service"},
		},
		"a GPU Xid from DCGM": {
			labels:  map[string]string{"alertname": "DCGMXidErrors", "host": "gpu-node-07", "gpu": "4", "xid": "79"},
			runbook: "gpu-node-health",
			params:  map[string]string{"host": "gpu-node-07"},
		},
		"a missing GPU": {
			labels:  map[string]string{"alertname": "GPUMissing", "host": "gpu-node-07"},
			runbook: "gpu-node-health",
			params:  map[string]string{"host": "gpu-node-07"},
		},
	} {
		got := routeAlert(routes, Alert{Labels: tc.labels, Annotations: tc.annotations})
		require.NotNil(t, got, name)
		require.NoError(t, got.Err, name)
		require.Equal(t, tc.runbook, got.Runbook, name)
		require.Equal(t, tc.params, got.Params, name)
		rb, err := cat.Get(got.Runbook)
		require.NoError(t, err)
		_, _, err = rb.ResolveParams(got.Params)
		require.NoError(t, err, name)
	}
	// A unit name that is not one never reaches a command line.
	got := routeAlert(routes, Alert{Labels: map[string]string{"alertname": "SystemdUnitFailed", "host": "h", "name": "x; reboot"}})
	require.NotNil(t, got)
	rb, err := cat.Get(got.Runbook)
	require.NoError(t, err)
	_, _, err = rb.ResolveParams(got.Params)
	require.ErrorContains(t, err, "unit")
}
