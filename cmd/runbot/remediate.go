package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// remediationOutcome is what the CLI reports about a remediation.
type remediationOutcome struct {
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

// exit turns the outcome into the run's exit status: a verified fix is a
// success; anything else keeps the diagnosis' status.
func (o *remediationOutcome) exit(diagnosisCode int) int {
	if o.State == store.PlanDone && o.Recovered {
		return exitOK
	}
	return diagnosisCode
}

func remediate(cmd *cobra.Command, rem *remediation.Remediator, p *engine.Prepared, rep *runbooks.Report, rf *remediateFlags, format string) (_ *remediationOutcome, err error) {
	ctx := cmd.Context()
	out := console.NewOutput(cmd.OutOrStdout())
	defer func() {
		if err == nil && out.Err() != nil {
			err = fmt.Errorf("write report: %w", out.Err())
		}
	}()
	text := format == "text"
	if rf.dryRun {
		body, err := rem.Plan(ctx, p, rep)
		if err != nil || body == nil {
			return nil, err
		}
		o := outcomeOf(body)
		o.DryRun = true
		if text {
			console.Plan(out, body, "")
			out.Println("Dry run: nothing was changed.")
		}
		return o, nil
	}
	prop, err := rem.Propose(ctx, p, rep, rf.requestedBy)
	if err != nil || prop == nil {
		if err == nil && text {
			out.Println("No remediation proposed.")
		}
		return nil, err
	}
	o := outcomeOf(&prop.Body)
	o.PlanID, o.PlanHash, o.State = prop.Plan.ID, prop.Plan.Hash, prop.Plan.State
	if text {
		console.Plan(out, &prop.Body, prop.Plan.ID)
		out.Printf("Approval: %s", strings.Join(prop.Plan.Policy.Approvers, ", "))
		if prop.Plan.Policy.TwoPerson {
			out.Printf(" (two-person rule: %s, who asked, cannot approve)", prop.Plan.RequestedBy)
		}
		out.Printf("; expires %s\n", prop.Plan.Policy.ExpiresAt.Local().Format("15:04:05"))
		if hint := groupHint(rem, prop.Plan.Policy.Approvers); hint != "" {
			out.Printf("Note: %s\n", hint)
		}
	}
	if prop.Body.Blocked != "" {
		// Nobody is asked to approve what applying would refuse.
		o.Message = "cannot be applied: " + prop.Body.Blocked
		if text {
			out.Println("Not asking for approval: this plan " + o.Message)
		}
		return o, nil
	}
	approver := rf.approveAs
	approve := true
	if approver == "" {
		approver, approve = askApproval(cmd.InOrStdin(), cmd.ErrOrStderr())
	}
	if approver == "" {
		o.Message = "not approved; the plan stays proposed until it expires (see runbot show " + rep.RunID + ")"
		if text {
			out.Println(o.Message)
		}
		return o, nil
	}
	res, err := rem.Vote(ctx, prop.Plan.ID, approver, approve, prop.Plan.Hash)
	if err != nil {
		if hint := groupHint(rem, prop.Plan.Policy.Approvers); hint != "" && errors.Is(err, remediation.ErrNotApprover) {
			return o, fmt.Errorf("approval: %w; %s", err, hint)
		}
		return o, fmt.Errorf("approval: %w", err)
	}
	o.State = res.Plan.State
	if res.Plan.State != store.PlanApproved {
		o.Message = fmt.Sprintf("%d of %d approvals; state %s", res.Approvals, res.Needed, res.Plan.State)
		if text {
			out.Println(o.Message)
		}
		return o, nil
	}
	if text {
		out.Printf("Approved by %s. Applying plan %s…\n", approver, prop.Plan.ID)
	}
	ar, err := rem.Apply(ctx, prop.Plan.ID, approver, func(ev remediation.ApplyEvent) {
		if text {
			out.Printf("  [%s] %s\n", ev.Stage, ev.Detail)
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
	if text {
		mark := "NOT RECOVERED"
		if o.Recovered {
			mark = "RECOVERED"
		}
		out.Printf("\nRemediation %s: %s — %s\n", o.State, mark, o.Message)
		if prop.Body.Escalate != "" {
			out.Printf("Note: %s\n", prop.Body.Escalate)
		}
	}
	return o, nil
}

func outcomeOf(b *remediation.PlanBody) *remediationOutcome {
	o := &remediationOutcome{Remediation: b.Remediation, Diff: b.Diff()}
	for _, a := range b.Actions {
		o.Actions = append(o.Actions, a.Plan.Summary)
	}
	return o
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

// askApproval prompts on the terminal. It returns the approver's name, or
// "" when the person declines or there is no terminal to ask.
func askApproval(in io.Reader, prompt io.Writer) (string, bool) {
	if f, ok := in.(*os.File); ok && !isTTY(f) {
		console.Note(prompt, "No terminal to ask for approval; use --approve-as USER to approve non-interactively.\n")
		return "", false
	}
	console.Note(prompt, "Approve? Type your user name to approve, or press Enter to decline: ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	name := strings.TrimSpace(line)
	return name, name != ""
}
