// Command runbot turns an SRE's diagnostic sequence into a declarative
// runbook and runs it: from the CLI, on a schedule, on an alert or from Slack.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/internal/xdg"
)

// Exit codes, documented in the README.
const (
	exitOK           = 0
	exitBadInput     = 1
	exitCritical     = 2
	exitInconclusive = 3
)

// exitError carries an exit code out of a command without printing more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		os.Exit(ee.code)
	default:
		fmt.Fprintln(os.Stderr, "runbot: "+err.Error())
		os.Exit(exitBadInput)
	}
}

type globalFlags struct {
	runbookDirs []string
	store       string
	// config is serve's config file; the other commands read it, when
	// given, to redact what they print as serve does.
	config string
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "runbot",
		Short:         "Runbooks that diagnose, explain and (with approval) fix production services",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildInfo(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().StringSliceVar(&g.runbookDirs, "runbooks", envList("RUNBOT_RUNBOOKS"), "directories of runbooks besides the built-ins (env RUNBOT_RUNBOOKS, comma-separated)")
	root.PersistentFlags().StringVar(&g.store, "store", defaultStore(), "where runs, plans and the audit log are kept: a SQLite file (or sqlite:///path), or a postgres:// URL (env RUNBOT_STORE)")
	root.PersistentFlags().StringVarP(&g.config, "config", "c", os.Getenv("RUNBOT_CONFIG"), "serve's config file (env RUNBOT_CONFIG); show, history and run read it to redact the secrets it names; plans, approve, deny and link use its store, operators: and web:")
	root.AddCommand(newLintCmd(g), newListCmd(g), newExplainCmd(g), newRunCmd(g), newHistoryCmd(g), newShowCmd(g), newDemoCmd(g), newServeCmd(g), newTestCmd(g), newRearmCmd(g),
		newPlansCmd(g), newVoteCmd(g, true), newVoteCmd(g, false), newLinkCmd(g), newVersionCmd())
	return root
}

func envList(name string) []string {
	v := os.Getenv(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// defaultStore is where the CLI keeps its store when neither --store nor
// RUNBOT_STORE names one. It follows the XDG base directory spec: runs are
// state.
func defaultStore() string {
	if p := os.Getenv("RUNBOT_STORE"); p != "" {
		return p
	}
	return xdg.State("runbot.db", "runbot.db")
}
