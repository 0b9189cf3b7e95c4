package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks"
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
// target, without running anything. A secret param's value shows as
// [redacted] in them.
func (e *Engine) Explain(p *Prepared) []PlannedStep {
	var out []PlannedStep
	now := e.now()
	hide := redact.Values(p.Secrets()...)
	for _, s := range p.Runbook.Steps {
		ct := s.CheckType
		for _, t := range p.targets[s.ID] {
			ps := PlannedStep{Step: s.ID, Check: s.Check, Target: t.Name(), Needs: s.Needs, Timeout: s.Timeout}
			args, err := RenderArgs(ct.Spec, s.With, runbooks.ArgData(p.Params, t, "(run id)", now))
			if err != nil {
				ps.Lines = []string{fmt.Sprintf("cannot render arguments: %v", err)}
			} else {
				ps.Lines = ct.Check.Plan(checks.Env{Target: t, Args: args, Now: e.now, RunStarted: now})
			}
			for i, l := range ps.Lines {
				ps.Lines[i] = hide.Redact(l)
			}
			out = append(out, ps)
		}
	}
	return out
}

// ExplainedAction is one action of a remediation on one target, with the
// arguments it would be given, for `runbot explain`: what would be
// planned, without reading the target (the plan itself, with a file's
// diff, is made when the diagnosis proposes it).
type ExplainedAction struct {
	Action string
	Target string
	// Args are the rendered arguments, "name = value", in the order of the
	// action's spec; an argument left at its default is not listed.
	Args []string
}

// ExplainRemediation lists each action of rem on each of its targets with
// its rendered arguments, a secret param's value shown as [redacted].
func (e *Engine) ExplainRemediation(ctx context.Context, p *Prepared, rem *runbooks.Remediation) ([]ExplainedAction, error) {
	var out []ExplainedAction
	now := e.now()
	hide := redact.Values(p.Secrets()...)
	for _, as := range rem.Actions {
		at := as.ActionType
		targets, err := e.Resolve(ctx, p.Runbook, as.Targets, p.Params)
		if err != nil {
			return nil, fmt.Errorf("explain %s: %w", rem.Name, err)
		}
		for _, t := range targets {
			ea := ExplainedAction{Action: as.Action, Target: t.Name()}
			args, err := RenderArgs(at.Spec, as.With, runbooks.ArgData(p.Params, t, "(run id)", now))
			if err != nil {
				ea.Args = []string{hide.Redact(fmt.Sprintf("cannot render arguments: %v", err))}
			}
			for _, a := range at.Spec.Args {
				v, set := args[a.Name]
				if err != nil || !set || fmt.Sprint(v) == fmt.Sprint(a.Default) {
					continue
				}
				ea.Args = append(ea.Args, hide.Redact(fmt.Sprintf("%s = %v", a.Name, v)))
			}
			out = append(out, ea)
		}
	}
	return out, nil
}
