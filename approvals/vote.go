// Package approvals casts votes on remediation plans away from chat: an
// operator on runbot's host voting with runbot approve or runbot deny, as
// the identity the config's operators: maps the OS user to, and the person
// at the terminal approving what runbot run --remediate proposes. Both
// vote through the remediator, under the same policy as a chat click.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// MinHashPrefix is the shortest pinned hash a vote accepts: short enough
// to type from the 12 characters a plan shows, long enough that it pins
// one plan.
const MinHashPrefix = 8

// Voter is one operator voting from runbot's host, without Slack: the
// vote is recorded in serve's store through the same code a click goes
// through, under the same policy, as the identity the config's operators:
// maps the OS user to. It applies nothing: runbot serve notices an
// approval at its next sweep and applies the plan, as it holds the engine,
// the SSH connections and the leases.
type Voter struct {
	// Config is serve's config: its operators:, groups and Slack user
	// groups.
	Config *config.Config
	// Approve is true for runbot approve, false for runbot deny.
	Approve bool
	// Login is the OS user voting; Identity is whom operators: maps it to.
	Login, Identity string
}

// NewVoter is the voter the OS user running runbot is (Login), as the
// config's operators: maps it; a user operators: does not name is refused.
func NewVoter(cfg *config.Config, approve bool) (*Voter, error) {
	v := &Voter{Config: cfg, Approve: approve}
	login, err := Login()
	if err != nil {
		return nil, err
	}
	identity, err := cfg.Operator(login)
	if err != nil {
		return nil, fmt.Errorf("%s refused: %w", v.Verb(), err)
	}
	v.Login, v.Identity = login, identity
	return v, nil
}

// Verb is the command the voter runs: approve or deny.
func (v *Voter) Verb() string { return Verb(v.Approve) }

// Verb names a vote's command: approve for an approval, deny otherwise.
func Verb(approve bool) string {
	if approve {
		return "approve"
	}
	return "deny"
}

// Vote shows the plan planID of serve's store st on out, as whom it votes,
// and votes on the hash it showed (pinned, when not "", is the hash the
// operator reviewed), then says what the vote did. out is the command's
// redacted output, which also hides the plan's secret params; a warning
// that the vote stands without its audit entry goes to stderr.
func (v *Voter) Vote(ctx context.Context, st store.Store, planID, pinned string, out *redact.Writer, stderr io.Writer) error {
	prop, err := v.Load(ctx, st, planID, pinned)
	if err != nil {
		return err
	}
	if _, err := out.AlsoHide(remediation.PlanSecrets([]store.Plan{prop.Plan})...); err != nil {
		return err
	}
	o := console.NewOutput(out)
	if err := Show(ctx, o, st, prop); err != nil {
		return err
	}
	console.Voting(o, v.Verb(), v.Identity, v.Login, v.Config.File)
	if o.Err() != nil {
		return fmt.Errorf("write the plan: %w", o.Err())
	}
	res, err := v.Cast(ctx, st, prop)
	if err != nil {
		if !errors.Is(err, remediation.ErrSourceNotAudited) {
			return err
		}
		// The vote stands; only the entry saying it came from here is
		// missing, which serve's sweep then treats as a click's.
		console.Note(stderr, "warning: %v\n", err)
	}
	did := "Denied"
	if v.Approve {
		did = "Approved"
	}
	console.Voted(o, did, prop.Plan.ID, res, store.DefaultRecoveryInterval)
	if o.Err() != nil {
		return fmt.Errorf("write the outcome: %w", o.Err())
	}
	return nil
}

// Show shows a plan as it is voted on (console.PlanStanding): the plan
// with the hash a vote is bound to, then where it stands in approvals and
// who may approve it.
func Show(ctx context.Context, w io.Writer, approvals store.ApprovalLog, prop *remediation.Proposal) error {
	s, err := remediation.StandingOf(ctx, approvals, prop.Plan)
	if err != nil {
		return err
	}
	console.PlanStanding(w, &prop.Body, s)
	return nil
}

// Load reads the plan to vote on from serve's store and makes sure that
// what it shows is what would be applied: its stored body hashes to its
// hash, which starts with pinned when pinned is not "" (the hash the
// operator reviewed).
func (v *Voter) Load(ctx context.Context, st store.Store, planID, pinned string) (*remediation.Proposal, error) {
	prop, err := (&remediation.Remediator{Store: st}).LoadProposal(ctx, planID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%s refused: no plan %s in runbot serve's store (runbot plans lists the plans awaiting approval)", v.Verb(), planID)
	}
	if err != nil {
		return nil, err
	}
	plan := prop.Plan
	// The hash voted on is the one of the plan shown: made from the
	// stored body, it must be the plan's, or what is shown is not what
	// would be applied.
	shown := prop.Body.Hash()
	if shown != plan.Hash {
		return nil, fmt.Errorf("%s refused: plan %s's stored body does not hash to its hash %.12s, so what it shows is not what would be applied; nothing was changed", v.Verb(), plan.ID, plan.Hash)
	}
	if pinned != "" && !strings.HasPrefix(shown, strings.ToLower(pinned)) {
		return nil, fmt.Errorf("%s refused: plan %s has hash %.12s, not the %s given with --hash: it is not the plan you reviewed; nothing was changed (look at it again: runbot plans %s)",
			v.Verb(), plan.ID, shown, pinned, plan.ID)
	}
	return prop, nil
}

// Cast votes on prop, bound to the hash of its body as Load showed it,
// through remediation.Remediator.VoteFrom: audited with where it came from
// (plan.vote_source). A refusal says why, for the operator. When only the
// audit entry could not be written, the vote stands and the error wraps
// remediation.ErrSourceNotAudited.
func (v *Voter) Cast(ctx context.Context, st store.Store, prop *remediation.Proposal) (store.ApprovalResult, error) {
	rem := &remediation.Remediator{Store: st, Groups: remediation.Groups(v.Config.Groups)}
	res, err := rem.VoteFrom(ctx, remediation.Source{Channel: remediation.ChannelCLI, Login: v.Login}, prop.Plan.ID, v.Identity, v.Approve, prop.Body.Hash())
	if err == nil {
		return res, nil
	}
	if why := v.refusal(err, prop.Plan); why != "" {
		return res, fmt.Errorf("%s refused: %s", v.Verb(), why)
	}
	if !errors.Is(err, remediation.ErrSourceNotAudited) {
		return res, fmt.Errorf("%s: %w", v.Verb(), err)
	}
	return res, err
}

// refusal says why a vote was not counted, for the operator; "" when err
// is not a refusal.
func (v *Voter) refusal(err error, plan store.Plan) string {
	var se *store.ApprovalError
	switch {
	case errors.Is(err, remediation.ErrNotApprover):
		why := fmt.Sprintf("%s (OS user %s) is not an approver of plan %s (approvers: %s); nothing was changed", v.Identity, v.Login, plan.ID, strings.Join(plan.Policy.Approvers, ", "))
		if hint := v.usergroupHint(plan.Policy.Approvers); hint != "" {
			why += "; " + hint
		}
		return why
	case errors.Is(err, remediation.ErrApproversUnknown):
		return fmt.Sprintf("whether %s may approve could not be checked (%v); nothing was changed", v.Identity, err)
	case errors.As(err, &se) && se.Reason == store.RefusedSelf:
		return fmt.Sprintf("the two-person rule applies: %s requested run %s and cannot approve its remediation; another approver has to. Nothing was changed", v.Identity, plan.RunID)
	case errors.As(err, &se) && se.Reason == store.RefusedStale:
		return fmt.Sprintf("plan %s changed since it was shown; nothing was changed (look at it again: runbot plans %s)", plan.ID, plan.ID)
	case errors.As(err, &se) && se.Reason == store.RefusedExpired:
		return fmt.Sprintf("the approval window of plan %s closed at %s; nothing will be applied (run the runbook again for a fresh plan)", plan.ID, plan.Policy.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"))
	case errors.As(err, &se):
		return fmt.Sprintf("plan %s is %s; votes are no longer taken", plan.ID, strings.ReplaceAll(string(se.State), "_", " "))
	}
	return ""
}

// usergroupHint says that a group the approvers name is looked up in
// Slack, which the CLI does not ask: only the config's own members of it
// may vote from here.
func (v *Voter) usergroupHint(approvers []string) string {
	var slackOnly []string
	for _, a := range approvers {
		name, ok := strings.CutPrefix(a, "@")
		if !ok {
			name, ok = strings.CutPrefix(a, "group:")
		}
		if _, follows := v.Config.SlackUsergroups[name]; ok && follows {
			slackOnly = append(slackOnly, name)
		}
	}
	if len(slackOnly) == 0 {
		return ""
	}
	return fmt.Sprintf("the members of Slack user group(s) of %s are not looked up from the CLI: list %s under groups.%s.members in %s to vote from here",
		strings.Join(slackOnly, ", "), v.Identity, slackOnly[0], v.Config.File)
}

// Login is the OS user running runbot, as the user database names it:
// the process's real uid, or, when that is root's and sudo started it, the
// user who ran sudo (SUDO_UID). The environment is believed for root only,
// who could vote as anyone anyway; $USER, which anyone can set, never is.
// The shipped unit keeps the store readable by runbot alone, so operators
// vote with sudo, and operators: maps them, not root.
func Login() (string, error) {
	uid := strconv.Itoa(os.Getuid())
	if sudo := os.Getenv("SUDO_UID"); uid == "0" && sudo != "" {
		u, err := user.LookupId(sudo)
		if err != nil {
			return "", fmt.Errorf("find the OS user who ran sudo: SUDO_UID %s is not in the user database (%w); only a user operators: names may vote", sudo, err)
		}
		return u.Username, nil
	}
	u, err := user.LookupId(uid)
	if err != nil {
		return "", fmt.Errorf("find the OS user running runbot: uid %s is not in the user database (%w); only a user operators: names may vote", uid, err)
	}
	return u.Username, nil
}
