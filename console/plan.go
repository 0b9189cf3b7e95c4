package console

import (
	"io"
	"strings"

	"github.com/runbot/runbot/runbooks/remediation"
)

// Plan shows a remediation plan as it will be approved: each action with
// the commands it runs, the diff, how it is verified and how it is rolled
// back. planID is empty for a dry run, which has no plan in the store.
func Plan(w io.Writer, b *remediation.PlanBody, planID string) {
	out := NewOutput(w)
	out.Printf("\nProposed remediation %s for %s on %s", b.Remediation, b.Diagnosis, b.Deployment)
	if planID != "" {
		out.Printf(" (plan %s, hash %.12s)", planID, b.Hash())
	}
	out.Println()
	for i, a := range b.Actions {
		rev := ""
		if a.Plan.Reversible {
			rev = " [reversible]"
		}
		if a.Plan.NoOp {
			rev += " [already done]"
		}
		out.Printf("  %d. %s%s\n", i+1, a.Plan.Summary, rev)
		for _, c := range a.Plan.Commands {
			out.Printf("       $ %s\n", firstLine(c))
		}
	}
	if d := b.Diff(); d != "" {
		out.Printf("\n%s\n", d)
	}
	if len(b.Verify) > 0 {
		out.Printf("Then verify with: %s\n", strings.Join(b.Verify, ", "))
	}
	out.Println(b.RollbackPlan())
	if b.Blocked != "" {
		out.Printf("Cannot be applied: %s\n", b.Blocked)
	}
}

func firstLine(s string) string {
	line, _, more := strings.Cut(s, "\n")
	if more {
		return line + " …"
	}
	return line
}
