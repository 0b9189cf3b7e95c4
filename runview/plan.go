package runview

import (
	"strings"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runbooks/remediation"
)

// PlanSections shows each planned action with its diff or its commands.
func PlanSections(body *remediation.PlanBody) []chat.Section {
	var out []chat.Section
	for _, a := range body.Actions {
		s := chat.Section{Heading: a.Plan.Summary}
		if a.Plan.NoOp {
			s.Text = "Already in place; nothing to do."
		}
		switch {
		case a.Plan.Diff != "":
			s.Code = a.Plan.Diff
		case len(a.Plan.Commands) > 0:
			s.Code = strings.Join(a.Plan.Commands, "\n")
		}
		if a.Plan.Reversible {
			s.Lines = append(s.Lines, chat.Line{Text: "reversible: rolled back if verification fails"})
		}
		out = append(out, s)
	}
	if len(body.Verify) > 0 {
		out = append(out, chat.Section{Heading: "Then verifies with", Text: strings.Join(body.Verify, ", ") + "\n" + body.RollbackPlan()})
	}
	return out
}

// ShortHash is how a plan hash is shown: its first 12 characters.
func ShortHash(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
