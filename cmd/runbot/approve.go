package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/approvals"
	"github.com/runbot/runbot/store"
)

// newVoteCmd is `runbot approve PLAN` (approve true) or `runbot deny PLAN`:
// the CLI's Approve and Deny buttons, for an operator on runbot's host
// without Slack. The vote is recorded in serve's store through the same
// code a click goes through, under the same policy, as the identity the
// config's operators: maps the OS user to; runbot serve notices an
// approval at its next sweep and applies the plan, as it holds the engine,
// the SSH connections and the leases.
func newVoteCmd(g *globalFlags, approve bool) *cobra.Command {
	verb := approvals.Verb(approve)
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
			if hash != "" && len(hash) < approvals.MinHashPrefix {
				return fmt.Errorf("--hash %q: give at least %d characters of the plan's hash", hash, approvals.MinHashPrefix)
			}
			cfg, err := g.serveConfig(verb)
			if err != nil {
				return err
			}
			v, err := approvals.NewVoter(cfg, approve)
			if err != nil {
				return err
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
			return v.Vote(cmd.Context(), st, args[0], hash, stdout, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&hash, "hash", "", fmt.Sprintf("vote only if the plan's hash starts with this (at least %d characters, as runbot plans PLAN shows it)", approvals.MinHashPrefix))
	return cmd
}
