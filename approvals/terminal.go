package approvals

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Outcome is what runbot run reports about a remediation (under
// "remediation" in its JSON).
type Outcome struct {
	Remediation string           `json:"remediation"`
	PlanID      string           `json:"plan_id,omitempty"`
	PlanHash    string           `json:"plan_hash,omitempty"`
	Diff        string           `json:"diff,omitempty"`
	Actions     []string         `json:"actions"`
	DryRun      bool             `json:"dry_run,omitempty"`
	State       store.PlanState  `json:"state,omitempty"`
	Recovered   bool             `json:"recovered"`
	Message     string           `json:"message,omitempty"`
	Verify      *runbooks.Report `json:"verify,omitempty"`
}

// Fixed reports whether the remediation was applied and verified: then
// the run succeeded whatever its diagnosis said.
func (o *Outcome) Fixed() bool { return o.State == store.PlanDone && o.Recovered }

func outcomeOf(b *remediation.PlanBody) *Outcome {
	o := &Outcome{Remediation: b.Remediation, Diff: b.Diff()}
	for _, a := range b.Actions {
		o.Actions = append(o.Actions, a.Plan.Summary)
	}
	return o
}

// Report is the JSON document of a run that remediated: the report's
// fields plus "remediation".
type Report struct {
	*runbooks.Report
	Remediation *Outcome `json:"remediation"`
}

// WriteReport writes rep as runbot run --format json prints it, indented,
// with the remediation's outcome under "remediation" when there was one
// (o is not nil).
func WriteReport(w io.Writer, rep *runbooks.Report, o *Outcome) error {
	doc := any(rep)
	if o != nil {
		doc = Report{Report: rep, Remediation: o}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// Terminal is runbot run --remediate (or --dry-run) for the person at the
// terminal: the diagnosis' remediation is proposed and shown, approved at
// the prompt or by ApproveAs under the same policy as a click, applied,
// verified and rolled back if verification fails.
type Terminal struct {
	Remediator *remediation.Remediator
	// DryRun shows the plan and changes nothing.
	DryRun bool
	// ApproveAs approves as this user without a prompt; "" asks at In.
	ApproveAs string
	// RequestedBy is who asked for the run.
	RequestedBy string
	// Text prints the plan and what became of it to Out; without it
	// (JSON output) only the Outcome says.
	Text bool
	// In is where the prompt reads the approver's name (stdin).
	In io.Reader
	// Out is the command's output; Prompt (stderr) is where the prompt
	// goes.
	Out, Prompt io.Writer
}

// Remediate remediates what rep diagnosed in the run p. It is nil with no
// error when the diagnosis proposes no remediation.
func (t *Terminal) Remediate(ctx context.Context, p *engine.Prepared, rep *runbooks.Report) (_ *Outcome, err error) {
	rem := t.Remediator
	out := console.NewOutput(t.Out)
	defer func() {
		if err == nil && out.Err() != nil {
			err = fmt.Errorf("write report: %w", out.Err())
		}
	}()
	say := func(msg string) {
		if t.Text {
			out.Println(msg)
		}
	}
	if t.DryRun {
		body, err := rem.Plan(ctx, p, rep)
		if err != nil || body == nil {
			return nil, err
		}
		o := outcomeOf(body)
		o.DryRun = true
		if t.Text {
			console.DryRun(out, body)
		}
		return o, nil
	}
	prop, err := rem.Propose(ctx, p, rep, t.RequestedBy)
	if err != nil || prop == nil {
		if err == nil {
			say("No remediation proposed.")
		}
		return nil, err
	}
	o := outcomeOf(&prop.Body)
	o.PlanID, o.PlanHash, o.State = prop.Plan.ID, prop.Plan.Hash, prop.Plan.State
	hint := groupHint(rem, prop.Plan.Policy.Approvers)
	if t.Text {
		console.Proposed(out, prop, hint)
	}
	if prop.Body.Blocked != "" {
		// Nobody is asked to approve what applying would refuse.
		o.Message = "cannot be applied: " + prop.Body.Blocked
		say("Not asking for approval: this plan " + o.Message)
		return o, nil
	}
	approver, approve := t.ApproveAs, true
	if approver == "" {
		approver, approve = askApproval(t.In, t.Prompt)
	}
	if approver == "" {
		o.Message = "not approved; the plan stays proposed until it expires (see runbot show " + rep.RunID + ")"
		say(o.Message)
		return o, nil
	}
	res, err := rem.Vote(ctx, prop.Plan.ID, approver, approve, prop.Plan.Hash)
	if err != nil {
		if hint != "" && errors.Is(err, remediation.ErrNotApprover) {
			return o, fmt.Errorf("approval: %w; %s", err, hint)
		}
		return o, fmt.Errorf("approval: %w", err)
	}
	o.State = res.Plan.State
	if res.Plan.State != store.PlanApproved {
		o.Message = fmt.Sprintf("%d of %d approvals; state %s", res.Approvals, res.Needed, res.Plan.State)
		say(o.Message)
		return o, nil
	}
	if t.Text {
		console.Applying(out, approver, prop.Plan.ID)
	}
	ar, err := rem.Apply(ctx, prop.Plan.ID, approver, func(ev remediation.ApplyEvent) {
		if t.Text {
			console.ApplyEvent(out, ev)
		}
	})
	if ar != nil {
		o.State, o.Recovered, o.Message, o.Verify = ar.State, ar.Recovered, ar.Message, ar.Verify
	}
	if err != nil {
		var stateErr *store.StateConflictError
		if errors.As(err, &stateErr) {
			return o, err
		}
		o.Message = err.Error()
	}
	if t.Text {
		console.Remediated(out, o.State, o.Recovered, o.Message, prop.Body.Escalate)
	}
	return o, nil
}

// groupHint says how to define the approver groups a policy names that
// this run does not know: the CLI has no config, so without --group no one
// can approve a plan whose approvers are all groups.
func groupHint(rem *remediation.Remediator, approvers []string) string {
	missing := rem.Groups.Undefined(approvers)
	if len(missing) == 0 || rem.Directory != nil {
		return ""
	}
	flags := make([]string, len(missing))
	for i, g := range missing {
		flags[i] = "--group " + g + "=USER[,USER...]"
	}
	return fmt.Sprintf("approver group %s has no members in this run; pass %s", strings.Join(missing, ", "), strings.Join(flags, " "))
}

// ParseGroups reads approver groups given as NAME=user1,user2 (runbot run
// --group), for @NAME in approval policies.
func ParseGroups(specs []string) (remediation.Groups, error) {
	g := remediation.Groups{}
	for _, s := range specs {
		name, members, ok := strings.Cut(s, "=")
		if !ok || name == "" || members == "" {
			return nil, fmt.Errorf("--group %q: want NAME=user1,user2", s)
		}
		g[name] = append(g[name], strings.Split(members, ",")...)
	}
	return g, nil
}

// askApproval prompts on the terminal. It returns the approver's name, or
// "" when the person declines or there is no terminal to ask.
func askApproval(in io.Reader, prompt io.Writer) (string, bool) {
	if f, ok := in.(*os.File); ok && !term.IsTerminal(int(f.Fd())) {
		console.Note(prompt, "No terminal to ask for approval; use --approve-as USER to approve non-interactively.\n")
		return "", false
	}
	console.Note(prompt, "Approve? Type your user name to approve, or press Enter to decline: ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	name := strings.TrimSpace(line)
	return name, name != ""
}
