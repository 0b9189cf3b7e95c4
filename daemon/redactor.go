package daemon

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

// serveRedactor is the one redaction of everything serve shows people:
// Slack's messages, the report pages and postmortems, the timeline
// pictures and the logs. It knows the default patterns, slack.redact, every
// secret the config names (Slack's tokens, the alert webhook's
// credentials, the link secret, the store's DSN and its password) and the
// passphrases of the inventory's SSH keys. A config secret that does not
// load stops serve here, as it would stop it a moment later anyway.
func serveRedactor(cfg *config.Config, inv *inventory.Inventory) (*redact.Redactor, error) {
	values, err := cfg.SecretValues()
	if err != nil {
		return nil, fmt.Errorf("load the secrets to redact: %w", err)
	}
	return ConfigRedactor(cfg, inv, values)
}

// ConfigRedactor is the redaction a config and an inventory call for, with
// values, the config's secrets that loaded: serve's, and the CLI's when it
// is given the config.
func ConfigRedactor(cfg *config.Config, inv *inventory.Inventory, values []secret.Value) (*redact.Redactor, error) {
	var patterns []string
	if cfg.Slack != nil {
		patterns = cfg.Slack.Redact
	}
	r, err := redact.New(patterns, append(values, passphrases(inv)...)...)
	if err != nil {
		return nil, fmt.Errorf("slack.redact: %w", err)
	}
	return r, nil
}

// passphrases are the SSH key passphrases the inventory names that load
// here. One that does not load is left out: its key cannot be used either,
// so nothing it unlocks is printed.
func passphrases(inv *inventory.Inventory) []secret.Value {
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
