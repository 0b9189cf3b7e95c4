package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/console"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/preflight"
)

// cliRedactor is the redaction of what the CLI prints and records about
// runs (preflight.CLIRedactor): serve's given --config (or RUNBOT_CONFIG).
// A config secret the user cannot read (the CLI run as someone else than
// the service) is named on stderr and the rest is still hidden.
func (g *globalFlags) cliRedactor(cmd *cobra.Command, extra []string) (_ *redact.Redactor, notice string, _ error) {
	r, notice, notes, err := preflight.CLIRedactor(g.config, extra)
	for _, n := range notes {
		console.Note(cmd.ErrOrStderr(), "note: %s\n", n)
	}
	return r, notice, err
}

// hideInOutput has cmd's redacted output (redactOutput) hide values too.
func hideInOutput(cmd *cobra.Command, values ...secret.Value) error {
	o, ok := cmd.OutOrStdout().(*redact.Writer)
	if !ok {
		return errors.New("hide the secret params: the output is not redacted")
	}
	_, err := o.AlsoHide(values...)
	return err
}

// redactOutput has cmd's standard output redacted by r until the returned
// function, deferred with the command's error, writes it out; notice goes
// to stderr with the output.
func redactOutput(cmd *cobra.Command, r *redact.Redactor, notice string, json bool) (*redact.Writer, func(*error)) {
	o := redact.NewWriter(cmd.OutOrStdout(), r, json, notice, cmd.ErrOrStderr())
	cmd.SetOut(o)
	return o, func(err *error) {
		if ferr := o.Flush(); ferr != nil {
			*err = errors.Join(*err, fmt.Errorf("write the output: %w", ferr))
		}
		if *err != nil {
			// The error goes to stderr, and may quote what a command
			// printed (an action that failed): it is hidden as the output
			// is.
			*err = redact.Error{Err: *err, R: o.Redactor()}
		}
	}
}
