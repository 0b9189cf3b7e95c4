package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExampleInventoryExplains: the shipped example inventory has the
// incident's deployment, so the README's first `explain` of each shipped
// SGLang runbook against it works (it failed: the example had no
// deployment at all).
func TestExampleInventoryExplains(t *testing.T) {
	runbot, _ := buildBinaries(t)
	for _, rb := range []string{"sglang-pd-wedge", "sglang-pd-audit"} {
		t.Run(rb, func(t *testing.T) {
			out, stderr, code := runRunbot(t, runbot, "explain", rb, "-i", "../../examples/inventory.yaml", "-p", "deployment=dsv4")
			require.Equal(t, 0, code, stderr)
			require.Contains(t, out, "on decode@gpu-1")
			require.Contains(t, out, "on router@gpu-1")
		})
	}
	out, _, code := runRunbot(t, runbot, "explain", "host-basics", "-i", "../../examples/inventory.yaml", "-p", "host=localhost")
	require.Equal(t, 0, code, out)
}
