package runbooks

import (
	"fmt"
	"time"

	"github.com/runbot/runbot/checks"
)

// PlannedStep is what one step would do on one target.
type PlannedStep struct {
	Step    string
	Check   string
	Target  string
	Needs   []string
	Timeout time.Duration
	Lines   []string
}

// Explain lists every command and request each step would make on each
// target, without running anything.
func (e *Engine) Explain(p *Prepared) []PlannedStep {
	var out []PlannedStep
	now := e.now()
	for _, s := range p.Runbook.Steps {
		ct, _ := checks.Lookup(s.Check)
		for _, t := range p.targets[s.ID] {
			ps := PlannedStep{Step: s.ID, Check: s.Check, Target: t.Name(), Needs: s.Needs, Timeout: s.Timeout}
			args, err := renderArgs(ct.Spec, s.With, argData(p.Params, t, "(run id)", now))
			if err != nil {
				ps.Lines = []string{fmt.Sprintf("cannot render arguments: %v", err)}
			} else {
				ps.Lines = ct.Check.Plan(checks.Env{Target: t, Args: args, Now: e.now, RunStarted: now})
			}
			out = append(out, ps)
		}
	}
	return out
}
