package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/approvals"
	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// newPlansCmd is `runbot plans`: the remediation plans in the store, by
// default the ones waiting for a vote, so that an operator without Slack
// sees what runbot serve proposed and may approve it with runbot approve.
func newPlansCmd(g *globalFlags) *cobra.Command {
	var (
		all    bool
		limit  int
		format string
	)
	cmd := &cobra.Command{
		Use:   "plans [PLAN]",
		Short: "List remediation plans, newest first: by default the ones awaiting approval; or show one",
		Long: "List remediation plans, newest first: by default the ones awaiting approval (state proposed),\n" +
			"with --all every plan. Each line says which run proposed the plan, what it fixes where, its\n" +
			"state, its approvals of the ones needed, who may approve it and when its approval window\n" +
			"closes. With --config (or RUNBOT_CONFIG) the plans are runbot serve's, read from the store\n" +
			"its config names; vote on one with runbot approve PLAN or runbot deny PLAN.\n\n" +
			"Given a PLAN, show that plan as runbot approve would vote on it: its actions, their diff,\n" +
			"how it is verified and rolled back, its hash (to pin with runbot approve --hash) and its approvals.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			red, notice, err := g.cliRedactor(cmd, nil)
			if err != nil {
				return err
			}
			stdout, flush := redactOutput(cmd, red, notice, format == "json")
			defer flush(&err)
			cfg, err := g.optionalServeConfig()
			if err != nil {
				return err
			}
			st, err := openServedStore(cmd, g, cfg)
			if err != nil {
				return err
			}
			defer closeInto(&err, st)
			if len(args) == 1 {
				return showOnePlan(cmd, st, stdout, args[0], format)
			}
			f := store.PlanFilter{Limit: limit}
			if !all {
				f.States = []store.PlanState{store.PlanProposed}
			}
			plans, err := st.ListPlans(cmd.Context(), f)
			if err != nil {
				return err
			}
			// A plan keeps its secret params' values; whatever of them a
			// line could show is hidden.
			if _, err := stdout.AlsoHide(remediation.PlanSecrets(plans)...); err != nil {
				return err
			}
			lines, err := remediation.Standings(cmd.Context(), st, plans)
			if err != nil {
				return err
			}
			if format == "json" {
				return console.PlansJSON(cmd.OutOrStdout(), lines)
			}
			if len(lines) == 0 {
				return console.NoPlans(cmd.OutOrStdout(), all)
			}
			return console.Plans(cmd.OutOrStdout(), lines, time.Now())
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every plan, in every state, not only those awaiting approval")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many plans")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

// showOnePlan shows one plan in full, as runbot approve shows it before
// it votes; stdout, the command's redacted output, also hides the plan's
// secret params.
func showOnePlan(cmd *cobra.Command, st store.Store, stdout *redact.Writer, id, format string) error {
	ctx := cmd.Context()
	prop, err := (&remediation.Remediator{Store: st}).LoadProposal(ctx, id)
	if err != nil {
		return err
	}
	if _, err := stdout.AlsoHide(remediation.PlanSecrets([]store.Plan{prop.Plan})...); err != nil {
		return err
	}
	if format == "json" {
		s, err := remediation.StandingOf(ctx, st, prop.Plan)
		if err != nil {
			return err
		}
		return console.PlanJSON(cmd.OutOrStdout(), s, prop.Body)
	}
	out := console.NewOutput(cmd.OutOrStdout())
	if err := approvals.Show(ctx, out, st, prop); err != nil {
		return err
	}
	if out.Err() != nil {
		return fmt.Errorf("write the plan: %w", out.Err())
	}
	return nil
}

// serveConfig loads serve's config for a command that acts on what serve
// runs (its store, its operators:, its web:), which it needs.
func (g *globalFlags) serveConfig(command string) (*config.Config, error) {
	if g.config == "" {
		return nil, fmt.Errorf("%s needs runbot serve's config: give --config FILE or set RUNBOT_CONFIG", command)
	}
	return g.optionalServeConfig()
}

// optionalServeConfig loads serve's config when --config (or
// RUNBOT_CONFIG) names one, and is nil otherwise.
func (g *globalFlags) optionalServeConfig() (*config.Config, error) {
	if g.config == "" {
		return nil, nil
	}
	cfg, err := config.Load(g.config)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	return cfg, nil
}

// openServedStore opens the store a command reads and votes in. Given
// serve's config it is serve's own (the config's store:): that is where
// serve keeps its plans and looks for votes, so a vote anywhere else would
// never be applied. Without one it is --store, as for runbot history.
func openServedStore(cmd *cobra.Command, g *globalFlags, cfg *config.Config) (store.Store, error) {
	loc := g.store
	if cfg != nil {
		if cmd.Flags().Changed("store") {
			return nil, errors.New("--store and --config both name a store: give one (with --config, runbot serve's store, the config's store:, is used)")
		}
		v, err := cfg.StoreLocation()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.File, err)
		}
		loc = v.Reveal()
	}
	return store.OpenForUse(cmd.Context(), loc)
}
