package alerts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/runbooks/catalog"
)

func testCatalog(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	c, problems, err := catalog.Load(dir)
	require.NoError(t, err)
	require.Empty(t, problems)
	return c
}

func TestAlertRouting(t *testing.T) {
	t.Parallel()
	cat := testCatalog(t, "testdata/alertmanager/runbooks")
	routes, err := compileRoutes([]Route{
		{Match: map[string]string{"alertname": "HighErrorRate", "service": "api"}, Runbook: "service-errors",
			Params: map[string]string{"host": "here", "service": "{{ .labels.service }}", "sleep": "{{ .annotations.wait | default \"\" }}"}},
		{Match: map[string]string{"alertname": "/High.*/", "team": ""}, Runbook: "service-errors",
			Params: map[string]string{"host": "here", "service": "{{ .labels.service | default \"unknown\" }}"}},
	}, cat)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		labels, annotations map[string]string
		want                *routed
	}{
		"exact match, params from labels; an empty param with default \"\" is left out": {
			labels: map[string]string{"alertname": "HighErrorRate", "service": "api"},
			want:   &routed{Runbook: "service-errors", Origin: "alert route 1 (service-errors)", Params: map[string]string{"host": "here", "service": "api"}},
		},
		"params from annotations": {
			labels:      map[string]string{"alertname": "HighErrorRate", "service": "api"},
			annotations: map[string]string{"wait": "3"},
			want:        &routed{Runbook: "service-errors", Origin: "alert route 1 (service-errors)", Params: map[string]string{"host": "here", "service": "api", "sleep": "3"}},
		},
		"regex match; an empty value matches an absent label": {
			labels: map[string]string{"alertname": "HighLatency", "service": "db"},
			want:   &routed{Runbook: "service-errors", Origin: "alert route 2 (service-errors)", Params: map[string]string{"host": "here", "service": "db"}},
		},
		"a template default": {
			labels: map[string]string{"alertname": "HighLatency"},
			want:   &routed{Runbook: "service-errors", Origin: "alert route 2 (service-errors)", Params: map[string]string{"host": "here", "service": "unknown"}},
		},
		"a regex matches the whole value": {
			labels: map[string]string{"alertname": "NotHighLatency"},
		},
		"a label present where the route wants it absent": {
			labels: map[string]string{"alertname": "HighLatency", "team": "db"},
		},
		"the runbook's own trigger, after the configured routes": {
			labels: map[string]string{"alertname": "ServiceErrors", "service": "checkout"},
			want:   &routed{Runbook: "service-errors", Origin: "runbook service-errors alert trigger 1", Params: map[string]string{"host": "here", "service": "checkout"}},
		},
		"the runbook's trigger regex refuses a hostile value": {
			labels: map[string]string{"alertname": "ServiceErrors", "service": "x; rm -rf /"},
		},
		"no route": {
			labels: map[string]string{"alertname": "DiskFull"},
		},
	} {
		got := routeAlert(routes, Alert{Labels: tc.labels, Annotations: tc.annotations})
		if tc.want != nil {
			// No runbook here has a secret param: messages show the params
			// as they are.
			tc.want.Shown = tc.want.Params
		}
		require.Equal(t, tc.want, got, name)
	}
}

func TestAlertRoutesRefuseMistakes(t *testing.T) {
	t.Parallel()
	cat := testCatalog(t, "testdata/alertmanager/runbooks")
	for name, tc := range map[string]struct {
		route Route
		want  string
	}{
		"unknown runbook": {Route{Match: map[string]string{"alertname": "X"}, Runbook: "service-erors"},
			`alert route 1 (service-erors): unknown runbook "service-erors" (did you mean "service-errors"?)`},
		"no matcher": {Route{Runbook: "service-errors"}, "match needs at least one label"},
		"bad regex":  {Route{Match: map[string]string{"alertname": "/(/"}, Runbook: "service-errors"}, "match alertname: error parsing regexp"},
		"unknown param": {Route{Match: map[string]string{"alertname": "X"}, Runbook: "service-errors", Params: map[string]string{"servce": "x"}},
			`runbook service-errors has no param "servce" (did you mean "service"?)`},
		"bad template": {Route{Match: map[string]string{"alertname": "X"}, Runbook: "service-errors", Params: map[string]string{"service": "{{ .labels.service"}},
			"param service: template:"},
	} {
		_, err := compileRoutes([]Route{tc.route}, cat)
		require.ErrorContains(t, err, tc.want, name)
	}
}
