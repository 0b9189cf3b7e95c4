package runbooks

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/argspec"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks/tmpl"
)

var idRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// LoadFile reads and validates one runbook file.
func LoadFile(path string) (*Runbook, yamlnode.Problems, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read runbook: %w", err)
	}
	rb, problems := Parse(path, data)
	return rb, problems, nil
}

// Parse validates runbook YAML against the default check and action
// types. It returns every problem found; the runbook is nil when any
// problem is an error.
func Parse(path string, data []byte) (*Runbook, yamlnode.Problems) {
	return ParseWith(path, data, Vocabulary{})
}

// Vocabulary is the check and action types a runbook may name; a nil
// registry is the default one (checks.Default, actions.Default).
type Vocabulary struct {
	Checks  *checks.Registry
	Actions *actions.Registry
}

// ParseWith is Parse against the check and action types of v: a test's or
// a plug-in's. The runbook's steps and actions keep the types they name,
// so that what runs them needs no registry.
func ParseWith(path string, data []byte, v Vocabulary) (*Runbook, yamlnode.Problems) {
	if v.Checks == nil {
		v.Checks = checks.Default
	}
	if v.Actions == nil {
		v.Actions = actions.Default
	}
	l := &loader{d: &yamlnode.Decoder{File: path}, rb: &Runbook{File: path}, vocab: v}
	root := l.d.Parse(data)
	if root != nil {
		l.decode(root)
		l.validate()
	}
	l.d.Problems.Sort()
	if l.d.Problems.Err() != nil {
		return nil, l.d.Problems
	}
	return l.rb, l.d.Problems
}

type loader struct {
	d     *yamlnode.Decoder
	rb    *Runbook
	vocab Vocabulary
	// positions of sections and ids, for cross-reference errors
	stepPos    map[string]*yaml.Node
	findingPos map[string]*yaml.Node
	// diagnosisPos is where each diagnosis id was first written: a
	// verdict names one diagnosis, so two may not share an id.
	diagnosisPos map[string]*yaml.Node
	needsNodes   map[string][]*yaml.Node
	remediate    map[string]*yaml.Node
	verifyNode   map[string][]*yaml.Node
	rootNode     *yaml.Node
	whenNodes    []whenRef
	summaries    []summaryRef
	// extractNodes are each command step's extract patterns by name, for
	// warnings at the pattern; converted are the paths conditions convert
	// to numbers (see checkEmptyCaptures).
	extractNodes map[string]map[string]*yaml.Node
	converted    [][]string
}

var topKeys = []string{"name", "title", "doc", "params", "triggers", "ssh", "steps", "findings", "diagnoses", "remediations"}

func (l *loader) decode(root *yaml.Node) {
	d, rb := l.d, l.rb
	l.rootNode = root
	l.stepPos, l.findingPos, l.diagnosisPos = map[string]*yaml.Node{}, map[string]*yaml.Node{}, map[string]*yaml.Node{}
	l.needsNodes, l.remediate, l.verifyNode = map[string][]*yaml.Node{}, map[string]*yaml.Node{}, map[string][]*yaml.Node{}
	d.Fields(root, "runbook", topKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "name":
			rb.Name = d.String(v, "name")
			if !nameRE.MatchString(rb.Name) {
				d.Errorf(v, "name %q: use lowercase letters, digits and '-'", rb.Name)
			}
		case "title":
			rb.Title = d.String(v, "title")
		case "doc":
			rb.Doc = d.String(v, "doc")
		case "params":
			d.Pairs(v, "params", func(name string, k, pv *yaml.Node) { l.param(name, k, pv) })
		case "triggers":
			l.triggers(v)
		case "ssh":
			d.Fields(v, "ssh", sshKeys, func(key string, _, sv *yaml.Node) {
				if key == "shared_session" {
					rb.SSH.SharedSession = d.Bool(sv, "ssh.shared_session")
				}
			})
		case "steps":
			d.Items(v, "steps", func(_ int, sv *yaml.Node) { l.step(sv) })
		case "findings":
			d.Items(v, "findings", func(_ int, fv *yaml.Node) { l.finding(fv) })
		case "diagnoses":
			d.Items(v, "diagnoses", func(_ int, dv *yaml.Node) { l.diagnosis(dv) })
		case "remediations":
			d.Pairs(v, "remediations", func(name string, k, rv *yaml.Node) { l.remediation(name, k, rv) })
		}
	})
	if rb.Name == "" {
		d.Errorf(root, "runbook: name is required")
	}
	if len(rb.Steps) == 0 {
		d.Errorf(root, "runbook: at least one step is required")
	}
}

var sshKeys = []string{"shared_session"}

var paramKeys = []string{"type", "required", "default", "values", "pattern", "min", "max", "secret", "doc"}

func (l *loader) param(name string, k, n *yaml.Node) {
	d := l.d
	if !idRE.MatchString(name) {
		d.Errorf(k, "param name %q: use lowercase letters, digits and '_'", name)
	}
	p := &Param{Name: name, Type: ParamString, Pos: yamlnode.PosOf(k)}
	var defNode, minNode, maxNode, secretNode *yaml.Node
	d.Fields(n, "param "+name, paramKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "type":
			p.Type = ParamType(d.String(v, "type"))
			if !slices.Contains(paramTypes, p.Type) {
				d.Errorf(v, "param %s: unknown type %q%s", name, p.Type, yamlnode.DidYouMean(string(p.Type), paramTypeNames()))
			}
		case "required":
			p.Required = d.Bool(v, "required")
		case "default":
			p.Default, p.HasDef, defNode = d.String(v, "default"), true, v
		case "values":
			p.Values = d.Strings(v, "values")
		case "pattern":
			p.Pattern = d.String(v, "pattern")
			if _, err := regexp.Compile(p.Pattern); err != nil {
				d.Errorf(v, "param %s: pattern: %v", name, err)
			}
		case "min":
			minNode = v
		case "max":
			maxNode = v
		case "secret":
			p.Secret, secretNode = d.Bool(v, "secret"), v
		case "doc":
			p.Doc = d.String(v, "doc")
		}
	})
	l.secretParam(p, secretNode, defNode)
	// Bounds are decoded once the type is known, wherever it was written.
	l.paramRange(p, minNode, maxNode)
	if p.Type == ParamEnum && len(p.Values) == 0 {
		d.Errorf(k, "param %s: an enum needs values", name)
	}
	if p.Required && p.HasDef {
		d.Errorf(defNode, "param %s: a required param cannot have a default", name)
	}
	if p.HasDef {
		if _, err := p.convert(p.Default); err != nil {
			d.Errorf(defNode, "param %s: default: %v", name, err)
		}
	}
	l.rb.Params = append(l.rb.Params, p)
}

// secretParam checks what a secret param may be: a string given at run
// time. A default is written in the runbook, which is not secret, and an
// enum's values are listed in every help text.
func (l *loader) secretParam(p *Param, secretNode, defNode *yaml.Node) {
	switch {
	case !p.Secret:
	case p.Type != ParamString:
		l.d.Errorf(secretNode, "param %s: secret applies to string params, not to %s params", p.Name, p.Type)
	case defNode != nil:
		l.d.Errorf(defNode, "param %s: a secret param cannot have a default (the runbook file is not secret); give the value when the run starts", p.Name)
	}
}

// paramRange decodes a param's min and max: integers for an int param,
// durations for a duration param. A range that admits no value is a
// problem, and so is a negative duration, which a duration param never is.
func (l *loader) paramRange(p *Param, minNode, maxNode *yaml.Node) {
	p.Min = l.paramBound(p, "min", minNode)
	p.Max = l.paramBound(p, "max", maxNode)
	switch {
	case p.Min != nil && p.Max != nil && greater(p.Min, p.Max):
		l.d.Errorf(minNode, "param %s: min %s is greater than max %s", p.Name, argspec.FormatValue(p.Min), argspec.FormatValue(p.Max))
	case p.Type == ParamDuration && p.Min == nil && p.Max != nil && p.Max.(time.Duration) == 0:
		l.d.Errorf(maxNode, "param %s: max 0s leaves no positive duration; declare min: 0s to allow zero", p.Name)
	default:
		return
	}
	// The default is still checked, against the type alone: one problem
	// with the range is enough.
	p.Min, p.Max = nil, nil
}

func (l *loader) paramBound(p *Param, key string, n *yaml.Node) any {
	if n == nil {
		return nil
	}
	var t argspec.Type
	switch p.Type {
	case ParamInt:
		t = argspec.Int
	case ParamDuration:
		t = argspec.Duration
	default:
		if slices.Contains(paramTypes, p.Type) {
			l.d.Errorf(n, "param %s: %s applies to int and duration params, not to a %s param", p.Name, key, p.Type)
		}
		return nil
	}
	v, err := argspec.Convert(t, l.d.Raw(n))
	if err != nil {
		l.d.Errorf(n, "param %s: %s: %v", p.Name, key, err)
		return nil
	}
	if d, ok := v.(time.Duration); ok && d < 0 {
		l.d.Errorf(n, "param %s: %s: a duration param is never negative, got %s", p.Name, key, argspec.FormatValue(d))
		return nil
	}
	return v
}

// greater reports whether a > b for two bounds of one param, both int or
// both time.Duration.
func greater(a, b any) bool {
	switch x := a.(type) {
	case int:
		return x > b.(int)
	case time.Duration:
		return x > b.(time.Duration)
	}
	return false
}

var triggerKeys = []string{"command", "args", "alerts", "schedule", "schedule_params"}

func (l *loader) triggers(n *yaml.Node) {
	d, t := l.d, &l.rb.Triggers
	d.Fields(n, "triggers", triggerKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "command":
			t.Command = d.String(v, "triggers.command")
			if !nameRE.MatchString(t.Command) {
				d.Errorf(v, "triggers.command %q: use lowercase letters, digits and '-'", t.Command)
			}
		case "args":
			t.Args = d.Strings(v, "triggers.args")
		case "schedule":
			t.Schedule = d.String(v, "triggers.schedule")
			if err := validateCron(t.Schedule); err != nil {
				d.Errorf(v, "triggers.schedule: %v", err)
			}
		case "schedule_params":
			t.ScheduleParams = d.StringMap(v, "triggers.schedule_params")
		case "alerts":
			d.Items(v, "triggers.alerts", func(_ int, av *yaml.Node) {
				at := AlertTrigger{Match: map[string]string{}, Params: map[string]*tmpl.Template{}, Pos: yamlnode.PosOf(av)}
				d.Fields(av, "alert trigger", []string{"match", "params"}, func(key string, _, v *yaml.Node) {
					switch key {
					case "match":
						at.Match = d.StringMap(v, "match")
					case "params":
						d.Pairs(v, "alert params", func(pname string, pk, pv *yaml.Node) {
							src := d.String(pv, "alert param "+pname)
							tp, err := tmpl.Parse(pname, src, false)
							if err != nil {
								d.Errorf(pv, "alert param %s: %v", pname, err)
								return
							}
							tp.Pos = yamlnode.PosOf(pv)
							if err := checkFields(tp, shapeOfValue(map[string]any{"labels": map[string]string{}, "annotations": map[string]string{}})); err != nil {
								d.Errorf(pv, "alert param %s: %v (templates see .labels and .annotations)", pname, err)
							}
							at.Params[pname] = tp
						})
					}
				})
				if len(at.Match) == 0 {
					d.Errorf(av, "alert trigger: match needs at least one label")
				}
				t.Alerts = append(t.Alerts, at)
			})
		}
	})
}

var stepKeys = []string{"id", "title", "check", "target", "with", "timeout", "needs"}

func (l *loader) step(n *yaml.Node) {
	d := l.d
	s := &Step{Pos: yamlnode.PosOf(n)}
	var withNode, checkNode *yaml.Node
	ok := d.Fields(n, "step", stepKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "id":
			s.ID = d.String(v, "step id")
			l.checkID(v, "step", s.ID, l.stepPos)
		case "title":
			s.Title = d.String(v, "title")
		case "check":
			s.Check, checkNode = d.String(v, "check"), v
		case "target":
			s.Targets = d.Strings(v, "target")
		case "with":
			withNode = v
		case "timeout":
			s.Timeout = d.Duration(v, "timeout")
			if s.Timeout <= 0 {
				d.Errorf(v, "step %s: timeout must be positive", s.ID)
			}
		case "needs":
			s.Needs = d.Strings(v, "needs")
			l.needsNodes[s.ID] = append(l.needsNodes[s.ID], v)
		}
	})
	if !ok {
		return
	}
	l.recordExtract(s, withNode)
	if s.ID == "" {
		d.Errorf(n, "step: id is required")
	}
	if len(s.Targets) == 0 {
		d.Errorf(n, "step %s: target is required (a role such as decode, or a host param)", s.ID)
	}
	for _, t := range s.Targets {
		if !idRE.MatchString(t) || (len(s.Targets) > 1 && slices.Contains(commonNames, t)) {
			d.Errorf(n, "step %s: target %q is not a valid role name", s.ID, t)
		}
	}
	if s.Check == "" {
		d.Errorf(n, "step %s: check is required", s.ID)
	} else if ct, ok := l.vocab.Checks.Lookup(s.Check); !ok {
		d.Errorf(checkNode, "step %s: unknown check %q%s", s.ID, s.Check, yamlnode.DidYouMean(s.Check, l.vocab.Checks.Names()))
	} else {
		s.CheckType = ct
		s.With = l.args("step "+s.ID, ct.Spec, withNode, n)
		if s.Timeout == 0 {
			s.Timeout = ct.Timeout
		}
	}
	l.rb.Steps = append(l.rb.Steps, s)
}

func (l *loader) checkID(n *yaml.Node, what, id string, seen map[string]*yaml.Node) {
	if !idRE.MatchString(id) {
		l.d.Errorf(n, "%s id %q: use lowercase letters, digits and '_', starting with a letter", what, id)
		return
	}
	if prev, dup := seen[id]; dup {
		l.d.Errorf(n, "%s id %q is already used at line %d", what, id, prev.Line)
		return
	}
	seen[id] = n
}

// args decodes a `with:` mapping against a spec: unknown names, missing
// required args and values of the wrong type are all reported.
func (l *loader) args(what string, spec argspec.Spec, n, owner *yaml.Node) map[string]*ArgValue {
	d := l.d
	out := map[string]*ArgValue{}
	if n != nil {
		d.Fields(n, what+" with", spec.ArgNames(), func(key string, k, v *yaml.Node) {
			arg, _ := spec.Arg(key)
			out[key] = l.argValue(what+": "+key, arg, v)
		})
	}
	for _, a := range spec.Args {
		if _, ok := out[a.Name]; ok {
			continue
		}
		if a.Required {
			at := owner
			if n != nil {
				at = n
			}
			d.Errorf(at, "%s: argument %q is required (%s)", what, a.Name, a.Doc)
			continue
		}
		if a.Default != nil {
			out[a.Name] = &ArgValue{Const: a.Default, IsConst: true, Raw: a.Default}
		}
	}
	return out
}

func (l *loader) argValue(what string, arg argspec.Arg, v *yaml.Node) *ArgValue {
	d := l.d
	av := &ArgValue{Raw: d.Raw(v), Pos: yamlnode.PosOf(v)}
	av.Template = map[string]*tmpl.Template{}
	collectTemplates(av.Raw, "", func(path, s string) {
		tp, err := tmpl.ParseFor(what, s, arg.EscapeContext())
		if err != nil {
			l.templateErr(v, path, s, what, err)
			return
		}
		tp.Pos = av.Pos
		l.templateWarnings(v, path, what, tp)
		if err := checkFields(tp, shapeOfValue(zeroArgData(l.rb))); err != nil {
			d.Errorf(v, "%s: %v", what, err)
		}
		av.Template[path] = tp
	})
	if len(av.Template) == 0 {
		c, err := argspec.Convert(arg.Type, av.Raw)
		if err == nil {
			err = arg.Validate(c)
		}
		if err != nil {
			d.Errorf(v, "%s: %v", what, err)
		}
		av.Const, av.IsConst = c, true
	}
	return av
}

// collectTemplates calls fn for every string leaf that holds a template.
func collectTemplates(raw any, path string, fn func(path, s string)) {
	switch x := raw.(type) {
	case string:
		if tmpl.Has(x) {
			fn(path, x)
		}
	case []any:
		for i, e := range x {
			collectTemplates(e, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	case map[string]any:
		for k, e := range x {
			collectTemplates(e, path+"."+k, fn)
		}
	}
}

var findingKeys = []string{"id", "severity", "when", "summary", "evidence", "claims"}

func (l *loader) finding(n *yaml.Node) {
	d := l.d
	f := &Finding{Severity: Warning, Pos: yamlnode.PosOf(n)}
	var whenNode *yaml.Node
	d.Fields(n, "finding", findingKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "id":
			f.ID = d.String(v, "finding id")
			l.checkID(v, "finding", f.ID, l.findingPos)
		case "severity":
			f.Severity = l.severity(v)
		case "when":
			f.When, whenNode = d.String(v, "when"), v
		case "summary":
			f.Summary = l.template(v, "finding summary")
		case "evidence":
			f.Evidence = d.Strings(v, "evidence")
			l.verifyNode["evidence:"+f.ID] = []*yaml.Node{v}
		case "claims":
			f.Claims = l.claims(v)
		}
	})
	if f.ID == "" {
		d.Errorf(n, "finding: id is required")
	}
	if whenNode == nil {
		d.Errorf(n, "finding %s: when is required", f.ID)
	}
	l.whenNodes = append(l.whenNodes, whenRef{node: whenNode, finding: f})
	l.rb.Findings = append(l.rb.Findings, f)
}

var diagnosisKeys = []string{"id", "severity", "when", "summary", "remediate", "claims"}

func (l *loader) diagnosis(n *yaml.Node) {
	d := l.d
	dg := &Diagnosis{Severity: Critical, Pos: yamlnode.PosOf(n)}
	var whenNode *yaml.Node
	d.Fields(n, "diagnosis", diagnosisKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "id":
			dg.ID = d.String(v, "diagnosis id")
			l.checkID(v, "diagnosis", dg.ID, l.diagnosisPos)
		case "severity":
			dg.Severity = l.severity(v)
		case "when":
			dg.When, whenNode = d.String(v, "when"), v
		case "summary":
			dg.Summary = l.template(v, "diagnosis summary")
		case "claims":
			dg.Claims = l.claims(v)
		case "remediate":
			l.remediate[dg.ID] = v
			if v.Kind == yaml.ScalarNode {
				dg.Remediate = d.String(v, "remediate")
				return
			}
			d.Items(v, "remediate", func(_ int, rv *yaml.Node) {
				rule := RemediateRule{Pos: yamlnode.PosOf(rv)}
				d.Fields(rv, "remediate rule", []string{"when", "use"}, func(key string, _, v *yaml.Node) {
					if key == "use" {
						rule.Use = d.String(v, "use")
						return
					}
					rule.When = &Condition{Source: d.String(v, "when"), Pos: yamlnode.PosOf(v)}
					l.whenNodes = append(l.whenNodes, whenRef{node: v, cond: rule.When})
				})
				if rule.Use == "" {
					d.Errorf(rv, "remediate rule: use is required (the remediation's name)")
				}
				dg.Rules = append(dg.Rules, rule)
			})
		}
	})
	if dg.ID == "" {
		d.Errorf(n, "diagnosis: id is required")
	}
	if whenNode == nil {
		d.Errorf(n, "diagnosis %s: when is required", dg.ID)
	}
	l.whenNodes = append(l.whenNodes, whenRef{node: whenNode, diagnosis: dg})
	l.rb.Diagnoses = append(l.rb.Diagnoses, dg)
}

var remediationKeys = []string{"doc", "approval", "preconditions", "actions", "verify", "verify_when", "settle", "rollback", "max_per_hour", "escalate"}

func (l *loader) remediation(name string, k, n *yaml.Node) {
	d := l.d
	r := &Remediation{Name: name, Rollback: RollbackOnFailedVerify, MaxPerHour: 2, Pos: yamlnode.PosOf(k),
		Approval: ApprovalPolicy{MinApprovals: 1, Expires: 15 * time.Minute}}
	d.Fields(n, "remediation "+name, remediationKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "doc":
			r.Doc = d.String(v, "doc")
		case "approval":
			d.Fields(v, "approval", []string{"approvers", "min_approvals", "two_person", "expires"}, func(key string, _, v *yaml.Node) {
				switch key {
				case "approvers":
					r.Approval.Approvers = d.Strings(v, "approvers")
				case "min_approvals":
					r.Approval.MinApprovals = d.Int(v, "min_approvals")
				case "two_person":
					r.Approval.TwoPerson = d.Bool(v, "two_person")
				case "expires":
					r.Approval.Expires = d.Duration(v, "expires")
				}
			})
		case "preconditions":
			d.Items(v, "preconditions", func(_ int, pv *yaml.Node) {
				c := &Condition{Source: d.String(pv, "precondition"), Pos: yamlnode.PosOf(pv)}
				r.Preconditions = append(r.Preconditions, c)
				l.whenNodes = append(l.whenNodes, whenRef{node: pv, cond: c})
			})
		case "verify_when":
			r.VerifyWhen = &Condition{Source: d.String(v, "verify_when"), Pos: yamlnode.PosOf(v)}
			l.whenNodes = append(l.whenNodes, whenRef{node: v, cond: r.VerifyWhen})
		case "actions":
			d.Items(v, "actions", func(_ int, av *yaml.Node) { r.Actions = append(r.Actions, l.action(name, av)) })
		case "verify":
			r.Verify = d.Strings(v, "verify")
			l.verifyNode["verify:"+name] = []*yaml.Node{v}
		case "rollback":
			r.Rollback = RollbackPolicy(d.String(v, "rollback"))
			if r.Rollback != RollbackOnFailedVerify && r.Rollback != RollbackNever {
				d.Errorf(v, "rollback must be on_failed_verify or never, got %q", r.Rollback)
			}
		case "max_per_hour":
			r.MaxPerHour = d.Int(v, "max_per_hour")
		case "settle":
			r.Settle = d.Duration(v, "settle")
		case "escalate":
			r.Escalate = d.String(v, "escalate")
		}
	})
	if len(r.Actions) == 0 {
		d.Errorf(k, "remediation %s: at least one action is required", name)
	}
	if len(r.Approval.Approvers) == 0 {
		d.Errorf(k, "remediation %s: approval.approvers is required (who may approve)", name)
	}
	if r.Approval.MinApprovals < 1 {
		d.Errorf(k, "remediation %s: approval.min_approvals must be at least 1", name)
	}
	l.rb.Remediations = append(l.rb.Remediations, r)
}

func (l *loader) action(rem string, n *yaml.Node) *ActionStep {
	d := l.d
	a := &ActionStep{Pos: yamlnode.PosOf(n)}
	var withNode, actNode *yaml.Node
	var rerun *bool
	d.Fields(n, "action", []string{"action", "target", "with", "timeout", "rerun_after_rollback"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "action":
			a.Action, actNode = d.String(v, "action"), v
		case "target":
			a.Targets = d.Strings(v, "target")
		case "with":
			withNode = v
		case "timeout":
			a.Timeout = d.Duration(v, "timeout")
		case "rerun_after_rollback":
			b := d.Bool(v, "rerun_after_rollback")
			rerun = &b
		}
	})
	if len(a.Targets) == 0 {
		d.Errorf(n, "remediation %s: action %s: target is required", rem, a.Action)
	}
	if a.Action == "" {
		d.Errorf(n, "remediation %s: action is required", rem)
	} else if at, ok := l.vocab.Actions.Lookup(a.Action); !ok {
		d.Errorf(actNode, "remediation %s: unknown action %q%s", rem, a.Action, yamlnode.DidYouMean(a.Action, l.vocab.Actions.Names()))
	} else {
		a.ActionType = at
		a.With = l.args("remediation "+rem+": action "+a.Action, at.Spec, withNode, n)
		if a.Timeout == 0 {
			a.Timeout = at.Timeout
		}
		a.RerunAfterRollback = at.RerunAfterRollback
	}
	if rerun != nil {
		a.RerunAfterRollback = *rerun
	}
	return a
}

func (l *loader) severity(v *yaml.Node) Severity {
	s := Severity(l.d.String(v, "severity"))
	if s != Critical && s != Warning && s != Info {
		l.d.Errorf(v, "severity must be critical, warning or info, got %q", s)
	}
	return s
}

func (l *loader) template(v *yaml.Node, what string) *tmpl.Template {
	src := l.d.String(v, what)
	t, err := tmpl.Parse(what, src, false)
	if err != nil {
		l.d.Errorf(v, "%s: %v", what, err)
		return nil
	}
	t.Pos = yamlnode.PosOf(v)
	l.summaries = append(l.summaries, summaryRef{node: v, t: t})
	return t
}

// NamePattern is the regular expression a runbook's name must match.
func NamePattern() string { return nameRE.String() }
