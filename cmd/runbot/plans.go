package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
			lines := make([]console.PlanLine, len(plans))
			for i, p := range plans {
				n, err := approvalsOf(cmd.Context(), st, p)
				if err != nil {
					return err
				}
				lines[i] = console.PlanLine{Plan: p, Runbook: runbookOf(p), Approvals: n}
			}
			if format == "json" {
				docs := make([]planDoc, len(lines))
				for i, l := range lines {
					docs[i] = planDocOf(l)
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(docs)
			}
			if len(lines) == 0 {
				what := "No plans are awaiting approval (runbot plans --all lists every plan)."
				if all {
					what = "No plans."
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), what)
				return err
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
		n, err := approvalsOf(ctx, st, prop.Plan)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			planDoc
			Body remediation.PlanBody `json:"plan"`
		}{planDocOf(console.PlanLine{Plan: prop.Plan, Runbook: prop.Body.Runbook, Approvals: n}), prop.Body})
	}
	out := console.NewOutput(cmd.OutOrStdout())
	if err := showPlan(ctx, out, st, prop); err != nil {
		return err
	}
	if out.Err() != nil {
		return fmt.Errorf("write the plan: %w", out.Err())
	}
	return nil
}

// showPlan shows a plan as it is voted on: console.Plan (with the hash a
// vote is bound to), then where it stands and who may approve it.
func showPlan(ctx context.Context, out *console.Output, st store.Store, prop *remediation.Proposal) error {
	plan := prop.Plan
	console.Plan(out, &prop.Body, plan.ID)
	n, err := approvalsOf(ctx, st, plan)
	if err != nil {
		return err
	}
	out.Printf("Run %s, plan %s: %s; %d of %d approvals; approvers: %s", plan.RunID, plan.ID, plan.State, n, plan.Policy.Needed(), strings.Join(plan.Policy.Approvers, ", "))
	if plan.Policy.TwoPerson {
		out.Printf(" (two-person rule: %s, who asked, cannot approve)", console.Dash(plan.RequestedBy))
	}
	if !plan.Policy.ExpiresAt.IsZero() {
		out.Printf("; expires %s", plan.Policy.ExpiresAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	out.Println()
	return nil
}

// planDoc is a plan in runbot plans' JSON: what the table shows, by name.
type planDoc struct {
	PlanID      string          `json:"plan_id"`
	RunID       string          `json:"run_id"`
	Runbook     string          `json:"runbook"`
	Remediation string          `json:"remediation"`
	Deployment  string          `json:"deployment"`
	Diagnosis   string          `json:"diagnosis,omitempty"`
	State       store.PlanState `json:"state"`
	Hash        string          `json:"hash"`
	Approvals   int             `json:"approvals"`
	Needed      int             `json:"needed"`
	Approvers   []string        `json:"approvers"`
	TwoPerson   bool            `json:"two_person"`
	RequestedBy string          `json:"requested_by"`
	CreatedAt   time.Time       `json:"created_at"`
	ExpiresAt   time.Time       `json:"expires_at,omitzero"`
}

func planDocOf(l console.PlanLine) planDoc {
	p := l.Plan
	return planDoc{PlanID: p.ID, RunID: p.RunID, Runbook: l.Runbook, Remediation: p.Remediation, Deployment: p.Deployment,
		Diagnosis: p.Diagnosis, State: p.State, Hash: p.Hash, Approvals: l.Approvals, Needed: p.Policy.Needed(),
		Approvers: p.Policy.Approvers, TwoPerson: p.Policy.TwoPerson, RequestedBy: p.RequestedBy, CreatedAt: p.CreatedAt,
		ExpiresAt: p.Policy.ExpiresAt}
}

// approvalsOf counts what the store counts toward settling a plan: the
// distinct people who approved its current hash.
func approvalsOf(ctx context.Context, st store.Store, p store.Plan) (int, error) {
	approvals, err := st.Approvals(ctx, p.ID)
	if err != nil {
		return 0, err
	}
	who := map[string]bool{}
	for _, a := range approvals {
		if a.Decision == store.Approve && a.PlanHash == p.Hash {
			who[a.User] = true
		}
	}
	return len(who), nil
}

// runbookOf is the runbook that proposed a plan, as its body says; "" for
// a body that does not say.
func runbookOf(p store.Plan) string {
	var body struct {
		Runbook string `json:"runbook"`
	}
	if json.Unmarshal(p.Body, &body) != nil {
		return ""
	}
	return body.Runbook
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
