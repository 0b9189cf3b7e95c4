package runbooks_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/step"
	"github.com/runbot/runbot/internal/target"
	"github.com/runbot/runbot/remote"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
)

// instantRunner answers every command at once, so the benchmark measures
// the engine (scheduling, templates, expressions), not /bin/sh.
type instantRunner struct{}

func (instantRunner) Run(context.Context, remote.Command) (remote.Output, error) {
	return remote.Output{Stdout: []byte("ok\n")}, nil
}
func (instantRunner) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("no network in this benchmark")
}
func (instantRunner) Host() string { return "bench" }

type instantTargets struct{}

func (instantTargets) Target(_ context.Context, ref engine.TargetRef) (target.Target, error) {
	return target.Target{Role: ref.Role, Host: ref.Host, Runner: instantRunner{}}, nil
}

// BenchmarkEngineOverheadPerStep runs a runbook of N independent steps plus
// one finding each, and reports the engine's cost per step.
func BenchmarkEngineOverheadPerStep(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("steps=%d", n), func(b *testing.B) {
			var y strings.Builder
			y.WriteString("name: bench\nparams:\n  host: {type: host, required: true}\nsteps:\n")
			for i := range n {
				fmt.Fprintf(&y, "  - {id: s%d, check: command, target: host, with: {cmd: 'echo {{ .params.host }}'}}\n", i)
			}
			y.WriteString("findings:\n")
			for i := range n {
				fmt.Fprintf(&y, "  - {id: f%d, when: 'steps.s%d.ok && steps.s%d.stdout == \"ok\\n\"', summary: 'step {{ .steps.s%d.target }} ok'}\n", i, i, i, i)
			}
			rb, problems := runbooks.Parse("bench.yaml", []byte(y.String()))
			require.Empty(b, problems)
			e := &engine.Engine{Targets: instantTargets{}}
			p, err := e.Prepare(b.Context(), rb, map[string]string{"host": "bench"})
			require.NoError(b, err)
			b.ResetTimer()
			for b.Loop() {
				rep := e.Run(b.Context(), p, engine.RunOptions{})
				if len(rep.Findings) != n || rep.Steps[0].Status != step.OK {
					b.Fatalf("unexpected report: %d findings", len(rep.Findings))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1000, "µs/step")
		})
	}
}
