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
// runs. Given --config (or RUNBOT_CONFIG), it is serve's: the same secrets
// are hidden at the terminal as in Slack. Without it the CLI knows only the
// default patterns and the --redact ones: the notice returned says so, to
// be shown with the output, since the config's secrets would print as they
// are. A config secret the user cannot read (the CLI run as someone else
// than the service) is named on stderr and the rest is still hidden.
func (g *globalFlags) cliRedactor(cmd *cobra.Command, extra []string) (_ *redact.Redactor, notice string, _ error) {
	if g.config == "" {
		r, err := redact.New(extra)
		if err != nil {
			return nil, "", fmt.Errorf("--redact: %w", err)
		}
		return r, "note: no --config (or RUNBOT_CONFIG): only the default patterns and --redact are redacted; the config's secrets are not known here\n", nil
	}
	r, notes, err := preflight.RedactorFor(g.config)
	if err != nil {
		return nil, "", err
	}
	for _, n := range notes {
		console.Note(cmd.ErrOrStderr(), "note: %s\n", n)
	}
	if r, err = r.With(extra); err != nil {
		return nil, "", fmt.Errorf("--redact: %w", err)
	}
	return r, "", nil
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
