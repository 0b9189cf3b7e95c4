package preflight

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/redact"
	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/inventory"
)

// Redactor is the one redaction of everything runbot shows people, as a
// config and an inventory call for it: Slack's messages, the report pages
// and postmortems, the timeline pictures, the logs, and what the CLI
// prints when it is given the config. It knows the default patterns,
// slack.redact, values (the config's secrets that loaded: Slack's tokens,
// the alert webhook's credentials, the link secret, the store's DSN and
// its password) and the passphrases of the inventory's SSH keys.
func Redactor(cfg *config.Config, inv *inventory.Inventory, values []secret.Value) (*redact.Redactor, error) {
	var patterns []string
	if cfg.Slack != nil {
		patterns = cfg.Slack.Redact
	}
	r, err := redact.New(patterns, append(values, Passphrases(inv)...)...)
	if err != nil {
		return nil, fmt.Errorf("slack.redact: %w", err)
	}
	return r, nil
}

// Passphrases are the SSH key passphrases the inventory names that load
// here. One that does not load is left out: its key cannot be used either,
// so nothing it unlocks is printed.
func Passphrases(inv *inventory.Inventory) []secret.Value {
	if inv == nil {
		return nil
	}
	var out []secret.Value
	for _, h := range inv.Hosts {
		if h.PassphraseEnv != "" {
			out = append(out, secret.New(os.Getenv(h.PassphraseEnv)))
		}
		if h.PassphraseFile != "" {
			if f, err := os.Open(h.PassphraseFile); err == nil {
				// The passphrase is the file's first line, as the SSH
				// transport reads it.
				line, _ := bufio.NewReader(f).ReadString('\n')
				_ = f.Close() // read only
				out = append(out, secret.New(strings.TrimRight(line, "\r\n")))
			}
		}
	}
	return out
}

// RedactorFor is Redactor for the config file at path, as the CLI uses
// it: the config must load, but a secret that does not load here (the CLI
// run as someone else than the service) and an inventory that does not
// load leave the rest hidden; notes say what is not.
func RedactorFor(path string) (_ *redact.Redactor, notes []string, _ error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--config: %w", err)
	}
	var inv *inventory.Inventory
	if cfg.Inventory != "" {
		if inv, err = inventory.Load(cfg.Inventory); err != nil {
			notes = append(notes, fmt.Sprintf("the inventory %s does not load (%v): SSH key passphrases are not redacted", cfg.Inventory, err))
		}
	}
	values, err := cfg.SecretValues()
	if err != nil {
		notes = append(notes, "not redacted, as they could not be read here: "+strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	r, err := Redactor(cfg, inv, values)
	return r, notes, err
}

// CLINotice is what the CLI says with its output when no config was given:
// the config's secrets would print as they are.
const CLINotice = "note: no --config (or RUNBOT_CONFIG): only the default patterns and --redact are redacted; the config's secrets are not known here\n"

// CLIRedactor is the redaction of what the CLI prints and records about
// runs, with the extra patterns of --redact. Given the config at path, it
// is serve's (RedactorFor, whose notes it returns): the same secrets are
// hidden at the terminal as in Slack. Without one (path "") it knows only
// the default patterns and extra, and notice (CLINotice) says so, to be
// shown with the output.
func CLIRedactor(path string, extra []string) (_ *redact.Redactor, notice string, notes []string, _ error) {
	if path == "" {
		r, err := redact.New(extra)
		if err != nil {
			return nil, "", nil, fmt.Errorf("--redact: %w", err)
		}
		return r, CLINotice, nil, nil
	}
	r, notes, err := RedactorFor(path)
	if err != nil {
		return nil, "", nil, err
	}
	if r, err = r.With(extra); err != nil {
		return nil, "", notes, fmt.Errorf("--redact: %w", err)
	}
	return r, "", notes, nil
}
