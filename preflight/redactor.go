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
