package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runbot/runbot/runbooks"
)

func newRunCmd(g *globalFlags) *cobra.Command {
	f := &runFlags{}
	var format string
	cmd := &cobra.Command{
		Use:   "run RUNBOOK",
		Short: "Run a runbook and report findings and diagnoses",
		Long: "Run a runbook (by name, or a path to a runbook file) against an inventory.\n\n" +
			"Exit status: 0 ran and found nothing critical; 1 could not run (bad input);\n" +
			"2 critical finding or diagnosis; 3 inconclusive (some steps could not run).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: want text or json", format)
			}
			eng, p, err := prepare(cmd.Context(), cmd, g, f, args[0])
			if err != nil {
				return err
			}
			opts := runbooks.RunOptions{Trigger: "cli"}
			tty := isTTY(os.Stderr)
			if tty && format == "text" {
				var mu sync.Mutex
				opts.Progress = func(ev runbooks.Event) {
					mu.Lock()
					defer mu.Unlock()
					printProgress(cmd.ErrOrStderr(), ev)
				}
			}
			rep := eng.Run(cmd.Context(), p, opts)
			if tty && format == "text" {
				fmt.Fprint(cmd.ErrOrStderr(), "\r\033[K")
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return fmt.Errorf("write report: %w", err)
				}
			} else {
				printReport(cmd.OutOrStdout(), rep, isTTY(os.Stdout))
			}
			return exitFor(rep)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func exitFor(rep *runbooks.Report) error {
	switch rep.Outcome {
	case runbooks.OutcomeCritical:
		return exitError{exitCritical}
	case runbooks.OutcomeInconclusive:
		return exitError{exitInconclusive}
	}
	return nil
}

func isTTY(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
