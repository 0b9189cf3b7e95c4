package runbooks

import (
	"reflect"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks/tmpl"
)

type whenRef struct {
	node      *yaml.Node
	finding   *Finding
	diagnosis *Diagnosis
	cond      *Condition
}

type summaryRef struct {
	node *yaml.Node
	t    *tmpl.Template
}

// validate checks cross-references and compiles expressions, after the
// whole document has been decoded so every problem is found in one pass.
// The steps run in this order, which is the order problems are reported
// in.
func (l *loader) validate() {
	ids := l.ids()
	l.checkDeploymentParams()
	l.checkNeeds(ids)
	// The expression environment, which conditions compile against and
	// summaries render against.
	l.buildEnv()
	env := l.rb.env.zero()
	envShape := shapeOfType(reflect.TypeOf(env))
	for _, w := range l.whenNodes {
		if w.node != nil {
			l.compileWhen(w, env, envShape, ids)
		}
	}
	l.checkReferences(ids)
	l.checkEmptyCaptures()
	// summaries render against a zero environment, which catches misspelt
	// names with missingkey=error.
	for _, s := range l.summaries {
		if err := checkFields(s.t, envShape); err != nil {
			l.d.Errorf(s.node, "summary: %v", err)
		}
	}
}

// runbookIDs are the names a runbook's references may use.
type runbookIDs struct {
	steps, findings, params, remediations []string
}

func (l *loader) ids() runbookIDs {
	rb := l.rb
	var ids runbookIDs
	for _, s := range rb.Steps {
		ids.steps = append(ids.steps, s.ID)
	}
	for _, f := range rb.Findings {
		ids.findings = append(ids.findings, f.ID)
	}
	for _, p := range rb.Params {
		ids.params = append(ids.params, p.Name)
	}
	for _, r := range rb.Remediations {
		ids.remediations = append(ids.remediations, r.Name)
	}
	return ids
}

// checkDeploymentParams allows one deployment param: steps name its roles.
func (l *loader) checkDeploymentParams() {
	deployments := 0
	for _, p := range l.rb.Params {
		if p.Type == ParamDeployment {
			deployments++
		}
	}
	if deployments > 1 {
		l.d.Errorf(l.rootNode, "runbook: at most one param may have type deployment; steps name its roles")
	}
}

// checkNeeds checks that every step a step needs exists, that no step
// needs itself or takes part in a loop, and each step's targets.
func (l *loader) checkNeeds(ids runbookIDs) {
	for _, s := range l.rb.Steps {
		for _, n := range s.Needs {
			if n == s.ID {
				l.errAtNeeds(s.ID, "step %s needs itself", s.ID)
			} else if !slices.Contains(ids.steps, n) {
				l.errAtNeeds(s.ID, "step %s needs %q, which is not a step%s", s.ID, n, yamlnode.DidYouMean(n, ids.steps))
			}
		}
		l.checkTarget("step "+s.ID, s.Targets, s.Pos)
	}
	if cyc := findCycle(l.rb.Steps); cyc != nil {
		l.errAtNeeds(cyc[0], "steps depend on each other in a loop: %s", joinArrow(cyc))
	}
}

// compileWhen checks what a condition names and compiles it, and gives the
// finding, diagnosis or precondition it belongs to its program.
func (l *loader) compileWhen(w whenRef, env any, envShape *shape, ids runbookIDs) {
	src := w.node.Value
	names, err := scanNames(src)
	if err != nil {
		msg, col := exprError(err)
		l.exprErr(w.node, col, "when: %s", msg)
		return
	}
	if !l.whenNamesExist(w, names, ids) || !l.whenChainsFit(w, names, envShape) {
		return
	}
	prog, err := compileBool(src, env)
	if err != nil {
		msg, col := exprError(err)
		l.exprErr(w.node, col, "when: %s", msg)
		return
	}
	refs := l.normalizeRefs(names.steps)
	l.converted = append(l.converted, names.converted...)
	switch {
	case w.finding != nil:
		w.finding.program, w.finding.refs, w.finding.reads = prog, refs, names.reads
	case w.diagnosis != nil:
		w.diagnosis.program, w.diagnosis.refs, w.diagnosis.findings = prog, refs, dedup(names.findings)
		w.diagnosis.summarySteps = templateSteps(w.diagnosis.Summary)
	case w.cond != nil:
		w.cond.program, w.cond.refs, w.cond.findings = prog, refs, dedup(names.findings)
	}
}

// whenNamesExist reports each step, target, finding and param a condition
// names that does not exist, and each bare get(); it says whether there
// was none.
func (l *loader) whenNamesExist(w whenRef, names *exprNames, ids runbookIDs) bool {
	rb := l.rb
	ok := true
	for _, r := range names.steps {
		s := rb.StepByID(r.Step)
		if s == nil {
			l.exprErr(w.node, names.at["steps."+r.Step], "when: no step %q%s", r.Step, yamlnode.DidYouMean(r.Step, ids.steps))
			ok = false
		} else if r.Role != "" && len(s.Targets) > 1 && !slices.Contains(s.Targets, r.Role) && !isStepField(r.Role) {
			l.exprErr(w.node, names.at["steps."+r.Step], "when: step %s has no target %q (targets: %v)", r.Step, r.Role, s.Targets)
			ok = false
		}
	}
	for _, f := range names.findings {
		if w.finding != nil {
			l.exprErr(w.node, names.at["findings."+f], "when: a finding cannot refer to findings (findings.%s): combine findings in a diagnosis, or repeat the condition", f)
			ok = false
		} else if !slices.Contains(ids.findings, f) {
			l.exprErr(w.node, names.at["findings."+f], "when: no finding %q%s", f, yamlnode.DidYouMean(f, ids.findings))
			ok = false
		}
	}
	for _, p := range names.params {
		if !slices.Contains(ids.params, p) {
			l.exprErr(w.node, names.at["params."+p], "when: no param %q%s", p, yamlnode.DidYouMean(p, ids.params))
			ok = false
		}
	}
	for _, at := range names.bareGets {
		l.exprErr(w.node, at, "when: get(...) yields nil when the key is missing, which fails when compared or converted: write get(...) ?? DEFAULT (see docs/runbooks.md, Expressions)")
		ok = false
	}
	return ok
}

// whenChainsFit checks each steps.… and params.… chain of a condition
// against the environment's shape and the steps' values keys; it reports
// the first that does not fit and says whether all did.
func (l *loader) whenChainsFit(w whenRef, names *exprNames, envShape *shape) bool {
	for _, c := range names.chains {
		if c.idents[0] != "steps" && c.idents[0] != "params" {
			continue
		}
		if err := checkChain(c.idents, envShape); err != nil {
			l.exprErr(w.node, c.at, "when: %v", err)
			return false
		}
		if err := checkValuesKey(l.rb, c.idents); err != nil {
			l.exprErr(w.node, c.at, "when: %v", err)
			return false
		}
	}
	return true
}

// checkReferences checks what is referred to by id: remediations,
// evidence and verify steps, action targets and trigger params.
func (l *loader) checkReferences(ids runbookIDs) {
	d, rb := l.d, l.rb
	for _, dg := range rb.Diagnoses {
		if dg.Remediate != "" && rb.Remediation(dg.Remediate) == nil {
			d.Errorf(l.remediate[dg.ID], "diagnosis %s: no remediation %q%s", dg.ID, dg.Remediate, yamlnode.DidYouMean(dg.Remediate, ids.remediations))
		}
		for _, rule := range dg.Rules {
			if rule.Use != "" && rb.Remediation(rule.Use) == nil {
				d.ErrorAt(rule.Pos, "diagnosis %s: no remediation %q%s", dg.ID, rule.Use, yamlnode.DidYouMean(rule.Use, ids.remediations))
			}
		}
	}
	for _, f := range rb.Findings {
		l.checkStepList(f.Evidence, "evidence:"+f.ID, "finding "+f.ID+" evidence", ids.steps)
	}
	for _, r := range rb.Remediations {
		l.checkStepList(r.Verify, "verify:"+r.Name, "remediation "+r.Name+" verify", ids.steps)
		for _, a := range r.Actions {
			l.checkTarget("action "+a.Action, a.Targets, a.Pos)
		}
	}
	for _, name := range rb.Triggers.Args {
		if rb.Param(name) == nil {
			d.Errorf(l.rootNode, "triggers.args: no param %q%s", name, yamlnode.DidYouMean(name, ids.params))
		}
	}
	for _, at := range rb.Triggers.Alerts {
		for name := range at.Params {
			if rb.Param(name) == nil {
				d.ErrorAt(at.Pos, "alert trigger: no param %q%s", name, yamlnode.DidYouMean(name, ids.params))
			}
		}
	}
	for name := range rb.Triggers.ScheduleParams {
		if rb.Param(name) == nil {
			d.Errorf(l.rootNode, "triggers.schedule_params: no param %q%s", name, yamlnode.DidYouMean(name, ids.params))
		}
	}
}

func (l *loader) checkTarget(owner string, targets []string, pos yamlnode.Pos) {
	rb := l.rb
	dep := rb.DeploymentParam()
	for _, t := range targets {
		if p := rb.Param(t); p != nil && p.Type == ParamHost {
			continue
		}
		if dep == nil {
			l.d.ErrorAt(pos, "%s: target %q is neither a role (the runbook has no deployment param) nor a host param", owner, t)
		}
	}
}

func (l *loader) checkStepList(ids []string, key, what string, stepIDs []string) {
	for _, id := range ids {
		if !slices.Contains(stepIDs, id) {
			l.d.Errorf(l.verifyNode[key][0], "%s: no step %q%s", what, id, yamlnode.DidYouMean(id, stepIDs))
		}
	}
}

func (l *loader) errAtNeeds(stepID, format string, args ...any) {
	if ns := l.needsNodes[stepID]; len(ns) > 0 {
		l.d.Errorf(ns[0], format, args...)
		return
	}
	l.d.Errorf(l.stepPos[stepID], format, args...)
}

// exprErr reports an expression problem at the column inside the
// expression: in a one-line plain or quoted scalar, or in a block scalar
// whose lines map one-for-one onto the value (yamlnode.BlockPos); else at
// the scalar.
func (l *loader) exprErr(n *yaml.Node, col int, format string, args ...any) {
	p := yamlnode.PosOf(n)
	if oneLine(n.Value) && (n.Style == 0 || n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle) {
		p.Col = exprPos(p.Col, col, n.Style != 0)
	} else if bp, ok := yamlnode.BlockPos(l.d.Source, n, col); ok {
		p = bp
	}
	l.d.ErrorAt(p, format, args...)
}

func (l *loader) buildEnv() {
	rb := l.rb
	e := &envTypes{stepTypes: map[string]*stepType{}}
	var names []string
	var types []reflect.Type
	for _, p := range rb.Params {
		names, types = append(names, p.Name), append(types, p.goType())
	}
	e.params, e.paramIdx = structOf(names, types)
	names, types = nil, nil
	for _, s := range rb.Steps {
		st := newStepType(s.CheckType.Spec.Outputs, s.Targets)
		if _, known := l.vocab.Checks.Lookup(s.Check); !known {
			// A step whose check is unknown (a typo, reported once) has
			// no outputs to type: what the runbook reads of it is not
			// checked, rather than reported again at every use.
			st = &stepType{typ: reflect.TypeFor[map[string]any](), outField: map[int]int{}}
		}
		e.stepTypes[s.ID] = st
		names, types = append(names, s.ID), append(types, st.typ)
	}
	e.steps, e.stepIdx = structOf(names, types)
	names, types = nil, nil
	for _, f := range rb.Findings {
		names, types = append(names, f.ID), append(types, reflect.TypeFor[bool]())
	}
	e.findings, e.findIdx = structOf(names, types)
	e.root, _ = structOf([]string{"params", "steps", "findings", "now"},
		[]reflect.Type{e.params, e.steps, e.findings, reflect.TypeFor[time.Time]()})
	rb.env = e
}

// isStepField reports whether name is a field every step has (exit_code,
// ran, ...) rather than one of its targets.
func isStepField(name string) bool {
	return slices.Contains(commonNames, name)
}

// normalizeRefs keeps a role only where it names one of a multi-target
// step's targets; `steps.slow.exit_code` refers to the whole step.
func (l *loader) normalizeRefs(refs []stepRef) []stepRef {
	var out []stepRef
	for _, r := range refs {
		if s := l.rb.StepByID(r.Step); s == nil || len(s.Targets) < 2 || !slices.Contains(s.Targets, r.Role) {
			r.Role = ""
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func dedup(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// findCycle returns the step ids of a dependency loop, if there is one.
func findCycle(steps []*Step) []string {
	needs := map[string][]string{}
	for _, s := range steps {
		needs[s.ID] = s.Needs
	}
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch state[id] {
		case active:
			i := slices.Index(stack, id)
			return append(slices.Clone(stack[i:]), id)
		case done:
			return nil
		}
		state[id] = active
		stack = append(stack, id)
		for _, n := range needs[id] {
			if _, ok := needs[n]; !ok {
				continue
			}
			if c := visit(n); c != nil {
				return c
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = done
		return nil
	}
	for _, s := range steps {
		if c := visit(s.ID); c != nil {
			return c
		}
	}
	return nil
}

func joinArrow(ids []string) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += " -> "
		}
		out += id
	}
	return out
}

// StepByID returns the step with the given id.
func (rb *Runbook) StepByID(id string) *Step {
	for _, s := range rb.Steps {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Remediation returns the named remediation.
func (rb *Runbook) Remediation(name string) *Remediation {
	for _, r := range rb.Remediations {
		if r.Name == name {
			return r
		}
	}
	return nil
}
