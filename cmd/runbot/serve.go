package main

import (
	"errors"
	"fmt"

	"github.com/runbot/runbot/daemon"
	"github.com/spf13/cobra"

	"github.com/runbot/runbot/preflight"
)

func newServeCmd(g *globalFlags) *cobra.Command {
	var (
		check    bool
		secrets  bool
		excerpts bool
		over     preflight.Overrides
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: Slack, the alert webhook, scheduled audits, health and metrics",
		Long: "Runs runbot as a daemon configured by one YAML file (see deploy/runbot.yaml).\n" +
			"/healthz and /readyz reflect the progress of the internal loops, not just that\n" +
			"HTTP answers; under systemd (Type=notify) READY=1 is sent only once really ready,\n" +
			"WATCHDOG=1 only while the loops make progress, STOPPING=1 on shutdown.\n\n" +
			"With --check it reads the config, the inventory and every runbook, checks every\n" +
			"reference between them, prints each problem as file:line:col and exits 1 if any\n" +
			"is an error; it starts, opens and writes nothing. --inventory and --runbook-dir\n" +
			"check against other files than the config names (before installing it).\n" +
			"Secret references and TLS files that do not load are warnings, or errors with\n" +
			"--secrets (run it as the service user, in its environment); values are never shown.\n" +
			"A host's identity, known_hosts or passphrase file that does not exist is an error,\n" +
			"one this user cannot read a warning (an error with --secrets). Relative paths are\n" +
			"read from the directory of the file that names them (the config or the inventory).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfgPath := g.config
			if cfgPath == "" {
				return errors.New("serve needs --config FILE")
			}
			if !check && (over.Inventory != "" || over.Runbooks != nil) {
				return errors.New("--inventory and --runbook-dir go with --check: the daemon uses the paths its config names")
			}
			// Read with --check too: a hook that would stop serve is
			// an error in the environment --check is run in.
			hooks, err := serveTestHooks()
			if err != nil {
				return err
			}
			plan, problems, err := preflight.Load(cfgPath, g.runbookDirs, over)
			if err != nil {
				return err
			}
			if check {
				if plan != nil {
					problems = append(problems, preflight.Secrets(plan.Config, secrets)...)
					problems = append(problems, preflight.Files(plan, secrets)...)
					problems.Sort()
				}
				return reportCheck(cmd, cfgPath, problems, excerpts)
			}
			if secrets {
				return errors.New("--secrets goes with --check: the daemon loads its secrets at start")
			}
			if err := problems.Err(); err != nil {
				return fmt.Errorf("config %s and what it names have errors (runbot serve --check lists them too):\n%w", cfgPath, err)
			}
			return daemon.Run(cmd.Context(), plan, daemon.SdNotify, hooks...)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "check the config and everything it names, start nothing; exit 1 on errors")
	addExcerptsFlag(cmd, &excerpts)
	cmd.Flags().BoolVar(&secrets, "secrets", false, "with --check: a secret reference, TLS file or host's file that does not load is an error, not a warning")
	cmd.Flags().StringVar(&over.Inventory, "inventory", "", "with --check: the inventory to check against instead of the config's")
	cmd.Flags().StringSliceVar(&over.Runbooks, "runbook-dir", nil, "with --check: runbook directories instead of the config's runbooks:")
	return cmd
}
