package timeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"

	"github.com/runbot/runbot/runbooks"
)

// loadReport reads a report fixture from testdata. wedge.json is a real
// run of the built-in sglang-pd-wedge runbook (production defaults: a 35 s
// chat probe, 5 samples 2 s apart) against the simulator after 11 minutes
// of traffic, a pd-wedge fault and 4 quiet minutes; see testdata/record.
func loadReport(tb testing.TB, name string) *runbooks.Report {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(tb, err)
	var rep runbooks.Report
	require.NoError(tb, json.Unmarshal(raw, &rep))
	return &rep
}

func vg2(x, y vg.Length) vg.Point { return vg.Point{X: x, Y: y} }
