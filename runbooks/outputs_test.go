package runbooks

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/checks"
)

// TestCheckOutputsDoNotShadowCommonFields keeps every check's outputs
// apart from the fields every step has, so `steps.x.state` always means
// the same thing.
func TestCheckOutputsDoNotShadowCommonFields(t *testing.T) {
	for _, name := range checks.Default.Names() {
		ct, _ := checks.Default.Lookup(name)
		if ct.Spec.Outputs == nil {
			continue
		}
		for i := range ct.Spec.Outputs.NumField() {
			f := ct.Spec.Outputs.Field(i)
			require.False(t, slices.Contains(commonNames, exprName(f)), "check %s: output %q shadows a common step field", name, exprName(f))
		}
	}
}
