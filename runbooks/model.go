// Package runbooks is runbot's runbook language: the model, the YAML loader
// that reports every problem with file:line:col, the validator, typed
// expressions and templates, params (secret ones included), claims,
// findings, diagnoses, verdicts and the report. It imports no store, no
// host and no inventory. What executes runbooks lives in sub-packages:
// the engine (runbooks/engine), target binding to the inventory
// (runbooks/bind), remediation (runbooks/remediation), the run recorder
// (runbooks/record), record and replay with the runbook tests
// (runbooks/replay); template escaping (runbooks/escape) and the schema
// and docs generator (runbooks/refdoc) are packages of their own too.
package runbooks

import (
	"maps"
	"slices"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/runbot/runbot/actions"
	"github.com/runbot/runbot/checks"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks/tmpl"
)

// Runbook is a loaded, validated runbook.
type Runbook struct {
	Name  string
	Title string
	Doc   string
	File  string

	Params       []*Param
	Triggers     Triggers
	SSH          SSHOptions
	Steps        []*Step
	Findings     []*Finding
	Diagnoses    []*Diagnosis
	Remediations []*Remediation

	env *envTypes
}

// SSHOptions say how a run may use its SSH connections.
type SSHOptions struct {
	// SharedSession lets every step of a run on one host share one SSH
	// session (a multiplexed shell, see sshrun.Shell) instead of opening a
	// session per command. Each command still has its own exit status,
	// output, timeout and kill.
	SharedSession bool
}

// Triggers say what starts a runbook besides the CLI.
type Triggers struct {
	// Command is the runbook's own word after the slash command, e.g.
	// "wedge" for `/runbot wedge dsv4`; Args maps positional words to params.
	Command string
	Args    []string
	Alerts  []AlertTrigger
	// Schedule is a cron expression; ScheduleParams fill the params.
	Schedule       string
	ScheduleParams map[string]string
}

// AlertTrigger maps an alert to this runbook.
type AlertTrigger struct {
	// Match is label name -> exact value (or /regex/).
	Match map[string]string
	// Params are templates over .labels and .annotations.
	Params map[string]*tmpl.Template
	Pos    yamlnode.Pos
}

// ParamType is a runbook parameter's type.
type ParamType string

const (
	ParamString     ParamType = "string"
	ParamInt        ParamType = "int"
	ParamDuration   ParamType = "duration"
	ParamBool       ParamType = "bool"
	ParamEnum       ParamType = "enum"
	ParamDeployment ParamType = "deployment"
	ParamHost       ParamType = "host"
)

// Param is one runbook parameter.
type Param struct {
	Name     string
	Type     ParamType
	Required bool
	Default  string
	HasDef   bool
	Values   []string // for enum
	Pattern  string   // optional regexp a string must match
	// Min and Max bound an int (int) or duration (time.Duration) param,
	// inclusive; nil when not declared. A duration param without a Min
	// must be positive.
	Min, Max any
	// Secret marks a value that must never be shown: runbot keeps it
	// only where it needs it to act (the queued work, the plan it
	// applies) and shows [redacted] for it everywhere else, also where a
	// command printed it.
	Secret bool
	Doc    string
	Pos    yamlnode.Pos
}

// Step is one check run on one or more targets.
type Step struct {
	ID    string
	Title string
	Check string
	// CheckType is the type Check names, as the loader's vocabulary had
	// it.
	CheckType checks.Type
	Targets   []string
	With      map[string]*ArgValue
	Timeout   time.Duration
	Needs     []string
	Pos       yamlnode.Pos
}

// ArgValue is one `with:` argument: a constant or a template rendered at
// run time.
type ArgValue struct {
	Raw any // decoded YAML value, string leaves may hold templates
	// Const is the converted value when Raw holds no template.
	Const    any
	IsConst  bool
	Template map[string]*tmpl.Template // template leaves by path, when not const
	Pos      yamlnode.Pos
}

// RollbackPolicy says what becomes of a fix's reversible changes when
// verification fails.
type RollbackPolicy string

const (
	// RollbackOnFailedVerify undoes the reversible changes of a fix that
	// did not verify; it is the default.
	RollbackOnFailedVerify RollbackPolicy = "on_failed_verify"
	// RollbackNever keeps them.
	RollbackNever RollbackPolicy = "never"
)

// Severity grades a finding.
type Severity string

const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Finding is a named observation: a typed condition over step results.
type Finding struct {
	ID       string
	Severity Severity
	When     string
	Summary  *tmpl.Template
	Evidence []string // step ids whose evidence supports the finding
	// Claims are the facts the finding asserts when it holds (see Claim).
	Claims []Claim
	Pos    yamlnode.Pos

	program *vm.Program
	refs    []stepRef
	// reads are the paths its condition reads, quoted when it fails.
	reads [][]string
}

// Diagnosis is a conclusion over findings, optionally with a remediation.
type Diagnosis struct {
	ID       string
	Severity Severity
	When     string
	Summary  *tmpl.Template
	// Remediate names the remediation to propose; with Rules, the first
	// rule whose condition holds picks it instead.
	Remediate string
	Rules     []RemediateRule
	// Claims are the facts the diagnosis asserts when it holds.
	Claims []Claim
	Pos    yamlnode.Pos

	program  *vm.Program
	refs     []stepRef
	findings []string
	// summarySteps are the steps its summary quotes.
	summarySteps []stepRef
}

// RemediateRule picks a remediation when its condition holds; a rule
// without a condition always holds.
type RemediateRule struct {
	When *Condition
	Use  string
	Pos  yamlnode.Pos
}

// Remediation is what to do about a diagnosis, once approved.
type Remediation struct {
	Name     string
	Doc      string
	Approval ApprovalPolicy
	// Preconditions are expressions that must still hold right before
	// applying (re-checked by running their steps again).
	Preconditions []*Condition
	Actions       []*ActionStep
	Verify        []string
	// VerifyWhen must be true after the verify steps ran again.
	VerifyWhen *Condition
	Rollback   RollbackPolicy
	// MaxPerHour limits how often this remediation may run per deployment.
	MaxPerHour int
	// Settle is how long to wait after the actions before verifying, so
	// a restarted service has come up.
	Settle time.Duration
	// Escalate is a message for humans shown with the outcome, e.g. when
	// the remediation is a stop-gap.
	Escalate string
	Pos      yamlnode.Pos
}

// Condition is a compiled boolean expression.
type Condition struct {
	Source   string
	Pos      yamlnode.Pos
	program  *vm.Program
	refs     []stepRef
	findings []string
}

// ApprovalPolicy says who must approve a remediation.
type ApprovalPolicy struct {
	Approvers    []string
	MinApprovals int
	TwoPerson    bool
	Expires      time.Duration
}

// ActionStep is one action of a remediation.
type ActionStep struct {
	Action string
	// ActionType is the type Action names, as the loader's vocabulary had
	// it.
	ActionType actions.Type
	Targets    []string
	With       map[string]*ArgValue
	Timeout    time.Duration
	// RerunAfterRollback: run this action again after the plan's
	// reversible changes were rolled back (see actions.Type).
	RerunAfterRollback bool
	Pos                yamlnode.Pos
}

// TargetRoles are the deployment roles rb's steps target, sorted: every
// step target that is not a host param.
func (rb *Runbook) TargetRoles() []string {
	seen := map[string]bool{}
	for _, s := range rb.Steps {
		for _, t := range s.Targets {
			if p := rb.Param(t); p != nil && p.Type == ParamHost {
				continue
			}
			seen[t] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}
