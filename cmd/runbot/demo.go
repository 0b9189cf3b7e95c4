package main

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/demo"
	"github.com/runbot/runbot/runbooks"
)

// newDemoCmd is `runbot demo`: the flags and the printing around demo.Run.
func newDemoCmd(g *globalFlags) *cobra.Command {
	var (
		simPath string
		yes     bool
		keep    bool
		dbPath  string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Wedge a simulated SGLang PD deployment, diagnose it, fix it with approval, prove the fix",
		Long: "Starts a simulated SGLang prefill/decode deployment (sglang-sim) with load, injects\n" +
			"the abort burst that wedges decode, runs sglang-pd-wedge, shows what the Slack message\n" +
			"would show, asks for approval (--yes skips the prompt), applies the fix, verifies it,\n" +
			"replays the burst to show the wedge no longer happens, and stops everything it started.\n" +
			"With SLACK_BOT_TOKEN and SLACK_CHANNEL set, the messages are also posted to that channel.\n" +
			"The runs and the audit trail are kept in --demo-store (runbot history --store FILE).\n" +
			"Without a terminal to ask on, pass --yes (make demo ARGS=--yes).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sim, err := demo.FindSim(simPath)
			if err != nil {
				return err
			}
			out := console.NewOutput(cmd.OutOrStdout())
			if f, ok := cmd.InOrStdin().(*os.File); ok && !yes && !isTTY(f) {
				out.Printf("stdin is not a terminal: the approval will be read from it; to approve without asking, pass --yes (make demo ARGS=--yes)\n")
			}
			err = demo.Run(cmd.Context(), demo.Options{
				Out: out, In: cmd.InOrStdin(), Yes: yes, Keep: keep, Store: dbPath, Sim: sim, RunbookDirs: g.runbookDirs,
				PrintReport: func(w io.Writer, rep *runbooks.Report) error { return console.Report(w, rep, false) },
			})
			switch {
			case errors.Is(err, demo.ErrWrite):
				return err
			case err != nil:
				out.Printf("\n✖ demo failed: %v\n", err)
				return exitError{exitBadInput}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&simPath, "sim", "", "path of the sglang-sim binary (default: next to runbot, then $PATH)")
	cmd.Flags().BoolVar(&yes, "yes", false, "approve the proposed fix without asking")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the simulated deployment and its directory for a look afterwards")
	cmd.Flags().StringVar(&dbPath, "demo-store", demo.DefaultStore(), "SQLite file the demo's runs and audit trail are kept in, for a look afterwards")
	return cmd
}
