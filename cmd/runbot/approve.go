package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// minHashPrefix is the shortest --hash accepted: short enough to type
// from the 12 characters a plan shows, long enough that it pins one plan.
const minHashPrefix = 8

// newVoteCmd is `runbot approve PLAN` (approve true) or `runbot deny PLAN`:
// the CLI's Approve and Deny buttons, for an operator on runbot's host
// without Slack. The vote is recorded in serve's store through the same
// code a click goes through, under the same policy, as the identity the
// config's operators: maps the OS user to; runbot serve notices an
// approval at its next sweep and applies the plan, as it holds the engine,
// the SSH connections and the leases.
func newVoteCmd(g *globalFlags, approve bool) *cobra.Command {
	verb, did := "deny", "Denied"
	if approve {
		verb, did = "approve", "Approved"
	}
	var hash string
	cmd := &cobra.Command{
		Use:   verb + " PLAN",
		Short: fmt.Sprintf("%s a proposed remediation plan as the identity operators: maps your OS user to", strings.ToUpper(verb[:1])+verb[1:]),
		Long: fmt.Sprintf("Show a proposed remediation plan and %s it, as runbot serve's Slack buttons do, for an operator\n"+
			"on runbot's host. The vote is cast as the identity the config's operators: maps the OS user running\n"+
			"this command to (--config or RUNBOT_CONFIG, serve's config), under the plan's approval policy:\n"+
			"its approvers and groups, how many approvals it needs, the two-person rule and its expiry. It is\n"+
			"bound to the hash of the plan shown; --hash pins the hash you reviewed (runbot plans PLAN shows it),\n"+
			"and the vote is refused if the plan is not that one any more. The vote is recorded in serve's store;\n"+
			"runbot serve applies an approved plan at its next sweep, within %s.\n\n"+
			"Exit status: 0 when the vote was recorded, 1 when it was refused (with the reason) or failed.",
			verb, store.DefaultRecoveryInterval),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if hash != "" && len(hash) < minHashPrefix {
				return fmt.Errorf("--hash %q: give at least %d characters of the plan's hash", hash, minHashPrefix)
			}
			cfg, err := g.serveConfig(verb)
			if err != nil {
				return err
			}
			login, err := osLogin()
			if err != nil {
				return err
			}
			identity, err := cfg.Operator(login)
			if err != nil {
				return fmt.Errorf("%s refused: %w", verb, err)
			}
			red, notice, err := g.cliRedactor(cmd, nil)
			if err != nil {
				return err
			}
			stdout, flush := redactOutput(cmd, red, notice, false)
			defer flush(&err)
			st, err := openServedStore(cmd, g, cfg)
			if err != nil {
				return err
			}
			defer closeInto(&err, st)
			v := vote{cmd: cmd, cfg: cfg, st: st, login: login, identity: identity, approve: approve, verb: verb, did: did,
				rem: &remediation.Remediator{Store: st, Groups: remediation.Groups(cfg.Groups)}}
			return v.cast(args[0], hash, stdout)
		},
	}
	cmd.Flags().StringVar(&hash, "hash", "", fmt.Sprintf("vote only if the plan's hash starts with this (at least %d characters, as runbot plans PLAN shows it)", minHashPrefix))
	return cmd
}

// vote is one runbot approve or runbot deny.
type vote struct {
	cmd             *cobra.Command
	cfg             *config.Config
	st              store.Store
	rem             *remediation.Remediator
	login, identity string
	approve         bool
	verb, did       string
}

// cast shows the plan and votes on the hash it showed; stdout, the
// command's redacted output, also hides the plan's secret params.
func (v *vote) cast(planID, pinned string, stdout *redact.Writer) error {
	ctx := v.cmd.Context()
	prop, err := v.rem.LoadProposal(ctx, planID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s refused: no plan %s in runbot serve's store (runbot plans lists the plans awaiting approval)", v.verb, planID)
	}
	if err != nil {
		return err
	}
	plan := prop.Plan
	if _, err := stdout.AlsoHide(remediation.PlanSecrets([]store.Plan{plan})...); err != nil {
		return err
	}
	// The hash voted on is the one of the plan shown here: made from the
	// stored body, it must be the plan's, or what is shown is not what
	// would be applied.
	shown := prop.Body.Hash()
	if shown != plan.Hash {
		return fmt.Errorf("%s refused: plan %s's stored body does not hash to its hash %.12s, so what it shows is not what would be applied; nothing was changed", v.verb, plan.ID, plan.Hash)
	}
	if pinned != "" && !strings.HasPrefix(shown, strings.ToLower(pinned)) {
		return fmt.Errorf("%s refused: plan %s has hash %.12s, not the %s given with --hash: it is not the plan you reviewed; nothing was changed (look at it again: runbot plans %s)",
			v.verb, plan.ID, shown, pinned, plan.ID)
	}
	out := console.NewOutput(v.cmd.OutOrStdout())
	if err := showPlan(ctx, out, v.st, prop); err != nil {
		return err
	}
	out.Printf("Voting %s as %s (OS user %s, operators: of %s)\n", v.verb, v.identity, v.login, v.cfg.File)
	if out.Err() != nil {
		return fmt.Errorf("write the plan: %w", out.Err())
	}

	res, err := v.rem.VoteFrom(ctx, remediation.Source{Channel: remediation.ChannelCLI, Login: v.login}, plan.ID, v.identity, v.approve, shown)
	if err != nil {
		if why := v.refusal(err, plan); why != "" {
			return fmt.Errorf("%s refused: %s", v.verb, why)
		}
		if !errors.Is(err, remediation.ErrSourceNotAudited) {
			return fmt.Errorf("%s: %w", v.verb, err)
		}
		// The vote stands; only the entry saying it came from here is
		// missing, which serve's sweep then treats as a click's.
		console.Note(v.cmd.ErrOrStderr(), "warning: %v\n", err)
	}
	switch {
	case res.Settled && res.Plan.State == store.PlanApproved:
		out.Printf("%s: plan %s is approved (%d of %d). runbot serve applies it at its next sweep, within %s; runbot plans --all shows how it ends.\n",
			v.did, plan.ID, res.Approvals, res.Needed, store.DefaultRecoveryInterval)
	case res.Settled && res.Plan.State == store.PlanDenied:
		out.Printf("%s: plan %s is denied; it will not be applied.\n", v.did, plan.ID)
	default:
		out.Printf("Vote recorded: %d of %d approvals; plan %s waits for more (state %s).\n", res.Approvals, res.Needed, plan.ID, res.Plan.State)
	}
	if out.Err() != nil {
		return fmt.Errorf("write the outcome: %w", out.Err())
	}
	return nil
}

// refusal says why a vote was not counted, for the operator; "" when err
// is not a refusal.
func (v *vote) refusal(err error, plan store.Plan) string {
	var se *store.ApprovalError
	switch {
	case errors.Is(err, remediation.ErrNotApprover):
		why := fmt.Sprintf("%s (OS user %s) is not an approver of plan %s (approvers: %s); nothing was changed", v.identity, v.login, plan.ID, strings.Join(plan.Policy.Approvers, ", "))
		if hint := v.usergroupHint(plan.Policy.Approvers); hint != "" {
			why += "; " + hint
		}
		return why
	case errors.Is(err, remediation.ErrApproversUnknown):
		return fmt.Sprintf("whether %s may approve could not be checked (%v); nothing was changed", v.identity, err)
	case errors.As(err, &se) && se.Reason == store.RefusedSelf:
		return fmt.Sprintf("the two-person rule applies: %s requested run %s and cannot approve its remediation; another approver has to. Nothing was changed", v.identity, plan.RunID)
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
func (v *vote) usergroupHint(approvers []string) string {
	var slackOnly []string
	for _, a := range approvers {
		name, ok := strings.CutPrefix(a, "@")
		if !ok {
			name, ok = strings.CutPrefix(a, "group:")
		}
		if _, follows := v.cfg.SlackUsergroups[name]; ok && follows {
			slackOnly = append(slackOnly, name)
		}
	}
	if len(slackOnly) == 0 {
		return ""
	}
	return fmt.Sprintf("the members of Slack user group(s) of %s are not looked up from the CLI: list %s under groups.%s.members in %s to vote from here",
		strings.Join(slackOnly, ", "), v.identity, slackOnly[0], v.cfg.File)
}

// osLogin is the OS user running runbot, as the user database names it:
// the process's real uid, or, when that is root's and sudo started it, the
// user who ran sudo (SUDO_UID). The environment is believed for root only,
// who could vote as anyone anyway; $USER, which anyone can set, never is.
// The shipped unit keeps the store readable by runbot alone, so operators
// vote with sudo, and operators: maps them, not root.
func osLogin() (string, error) {
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
