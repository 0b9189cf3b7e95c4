package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/daemon"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/inventory"
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
	cfg, err := config.Load(g.config)
	if err != nil {
		return nil, "", fmt.Errorf("--config: %w", err)
	}
	var inv *inventory.Inventory
	if cfg.Inventory != "" {
		if inv, err = inventory.Load(cfg.Inventory); err != nil {
			note(cmd.ErrOrStderr(), "note: the inventory %s does not load (%v): SSH key passphrases are not redacted\n", cfg.Inventory, err)
		}
	}
	values, err := cfg.SecretValues()
	if err != nil {
		note(cmd.ErrOrStderr(), "note: not redacted, as they could not be read here: %v\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	r, err := daemon.ConfigRedactor(cfg, inv, values)
	if err != nil {
		return nil, "", err
	}
	if r, err = r.With(extra); err != nil {
		return nil, "", fmt.Errorf("--redact: %w", err)
	}
	return r, "", nil
}

// redactedOut is a command's standard output, redacted. It holds what is
// written until Flush, so that a secret printed in pieces (a private key
// line by line) is matched whole; JSON
// is redacted string by string, so that it stays valid. Once Direct, each
// write is redacted and passed on at once, for output that must appear
// before a prompt. A notice, when set, goes to notices (stderr) once,
// when something is first written out: a command that fails before it
// shows anything is not cluttered with it.
type redactedOut struct {
	dst     io.Writer
	r       *redact.Redactor
	json    bool
	direct  bool
	buf     bytes.Buffer
	notice  string
	notices io.Writer
}

func (o *redactedOut) noticeOnce() {
	if o.notice != "" {
		note(o.notices, "%s", o.notice)
		o.notice = ""
	}
}

func (o *redactedOut) Write(p []byte) (int, error) {
	if !o.direct {
		return o.buf.Write(p)
	}
	o.noticeOnce()
	if _, err := io.WriteString(o.dst, o.r.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// alsoHide has o hide values too (a run's secret params) and returns its
// redactor, now hiding them, for what the command writes elsewhere (a
// recording, a picture).
func (o *redactedOut) alsoHide(values ...secret.Value) (*redact.Redactor, error) {
	if len(values) == 0 {
		return o.r, nil
	}
	r, err := o.r.With(nil, values...)
	if err != nil {
		return nil, fmt.Errorf("hide the secret params: %w", err)
	}
	o.r = r
	return r, nil
}

// hideInOutput has cmd's redacted output (redactOutput) hide values too.
func hideInOutput(cmd *cobra.Command, values ...secret.Value) error {
	o, ok := cmd.OutOrStdout().(*redactedOut)
	if !ok {
		return errors.New("hide the secret params: the output is not redacted")
	}
	_, err := o.alsoHide(values...)
	return err
}

// Direct flushes what is held and passes every later write on at once.
func (o *redactedOut) Direct() error {
	err := o.Flush()
	o.direct = true
	return err
}

// Flush writes what is held, redacted.
func (o *redactedOut) Flush() error {
	if o.buf.Len() == 0 {
		return nil
	}
	defer o.buf.Reset()
	o.noticeOnce()
	if o.json {
		out, err := o.r.JSON(o.buf.Bytes())
		if err != nil {
			return fmt.Errorf("redact the output: %w", err)
		}
		_, err = o.dst.Write(out)
		return err
	}
	_, err := io.WriteString(o.dst, o.r.Redact(o.buf.String()))
	return err
}

// redactOutput has cmd's standard output redacted by r until the returned
// function, deferred with the command's error, writes it out; notice goes
// to stderr with the output.
func redactOutput(cmd *cobra.Command, r *redact.Redactor, notice string, json bool) (*redactedOut, func(*error)) {
	o := &redactedOut{dst: cmd.OutOrStdout(), r: r, json: json, notice: notice, notices: cmd.ErrOrStderr()}
	cmd.SetOut(o)
	return o, func(err *error) {
		if ferr := o.Flush(); ferr != nil {
			*err = errors.Join(*err, fmt.Errorf("write the output: %w", ferr))
		}
		if *err != nil {
			// The error goes to stderr, and may quote what a command
			// printed (an action that failed): it is hidden as the output
			// is.
			*err = redactedError{err: *err, r: o.r}
		}
	}
}

// redactedError is an error as a command shows it: redacted. It unwraps
// to the error, so exit codes and typed errors still tell what happened.
type redactedError struct {
	err error
	r   *redact.Redactor
}

func (e redactedError) Error() string { return e.r.Redact(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }
