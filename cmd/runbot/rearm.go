package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/approvals"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// newRearmCmd is `runbot rearm DEPLOYMENT DIAGNOSIS --as USER`: the CLI's
// way to close a circuit breaker a failed fix opened, as `/runbot rearm`
// is Slack's.
func newRearmCmd(g *globalFlags) *cobra.Command {
	var (
		as     string
		groups []string
	)
	cmd := &cobra.Command{
		Use:   "rearm DEPLOYMENT DIAGNOSIS",
		Short: "Re-arm the circuit breaker a failed fix opened, so that a new approved fix may run",
		Long: "After a remediation did not fix a diagnosis on a deployment, runbot refuses to apply a fix\n" +
			"for that diagnosis there again until someone has looked: rearm records, in the audit log,\n" +
			"that USER has, and lets the next approved plan run. USER must be one who may approve the\n" +
			"plan that failed (its approvers, or a member of an approver group given with --group).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if as == "" {
				return errors.New("rearm: --as USER is required: the person who looked, who must be one who may approve the failed plan")
			}
			gr, err := approvals.ParseGroups(groups)
			if err != nil {
				return err
			}
			st, err := store.OpenForUse(cmd.Context(), g.store)
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }() // nothing is pending once the audit entry is written
			rem := &remediation.Remediator{Store: st, Groups: gr}
			plan, err := rem.Rearm(cmd.Context(), args[0], args[1], as)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Re-armed the breaker of %s on %s, opened when plan %s ended %s; the next approved fix may run.\n",
				args[1], args[0], plan.ID, plan.State)
			return err
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "who looked and re-arms (must be allowed to approve the failed plan)")
	cmd.Flags().StringArrayVar(&groups, "group", nil, "approver group as NAME=user1,user2 (repeatable), for @NAME in approval policies")
	return cmd
}
