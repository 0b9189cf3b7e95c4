package console

import (
	"io"
	"strings"
	"time"

	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// Voting says, after the plan and before the vote, as whom runbot approve
// or runbot deny votes: the identity the config's operators: (in file)
// maps the OS login to.
func Voting(w io.Writer, verb, identity, login, file string) {
	NewOutput(w).Printf("Voting %s as %s (OS user %s, operators: of %s)\n", verb, identity, login, file)
}

// Voted says what a vote cast from runbot's host did to plan planID: did
// is "Approved" or "Denied"; serve applies an approved plan at its next
// sweep, within sweep.
func Voted(w io.Writer, did, planID string, res store.ApprovalResult, sweep time.Duration) {
	out := NewOutput(w)
	switch {
	case res.Settled && res.Plan.State == store.PlanApproved:
		out.Printf("%s: plan %s is approved (%d of %d). runbot serve applies it at its next sweep, within %s; runbot plans --all shows how it ends.\n",
			did, planID, res.Approvals, res.Needed, sweep)
	case res.Settled && res.Plan.State == store.PlanDenied:
		out.Printf("%s: plan %s is denied; it will not be applied.\n", did, planID)
	default:
		out.Printf("Vote recorded: %d of %d approvals; plan %s waits for more (state %s).\n", res.Approvals, res.Needed, planID, res.Plan.State)
	}
}

// DryRun shows the plan runbot run --dry-run made and says that it
// changed nothing.
func DryRun(w io.Writer, b *remediation.PlanBody) {
	Plan(w, b, "")
	NewOutput(w).Println("Dry run: nothing was changed.")
}

// Proposed shows a plan runbot run --remediate proposed, who may approve
// it and until when, with hint (when not "") on how to make approval
// possible.
func Proposed(w io.Writer, prop *remediation.Proposal, hint string) {
	out := NewOutput(w)
	Plan(out, &prop.Body, prop.Plan.ID)
	pol := prop.Plan.Policy
	out.Printf("Approval: %s", strings.Join(pol.Approvers, ", "))
	if pol.TwoPerson {
		out.Printf(" (two-person rule: %s, who asked, cannot approve)", prop.Plan.RequestedBy)
	}
	out.Printf("; expires %s\n", pol.ExpiresAt.Local().Format("15:04:05"))
	if hint != "" {
		out.Printf("Note: %s\n", hint)
	}
}

// Applying says that an approved plan is being applied.
func Applying(w io.Writer, approver, planID string) {
	NewOutput(w).Printf("Approved by %s. Applying plan %s…\n", approver, planID)
}

// ApplyEvent shows one stage of applying a plan.
func ApplyEvent(w io.Writer, ev remediation.ApplyEvent) {
	NewOutput(w).Printf("  [%s] %s\n", ev.Stage, ev.Detail)
}

// Remediated says how applying a plan ended: its state, whether the
// service recovered and why, and escalate (when not "") to the person.
func Remediated(w io.Writer, state store.PlanState, recovered bool, message, escalate string) {
	out := NewOutput(w)
	mark := "NOT RECOVERED"
	if recovered {
		mark = "RECOVERED"
	}
	out.Printf("\nRemediation %s: %s — %s\n", state, mark, message)
	if escalate != "" {
		out.Printf("Note: %s\n", escalate)
	}
}
