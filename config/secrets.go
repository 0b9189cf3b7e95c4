package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/internal/yamlnode"
)

// SecretUse is one secret the config refers to: the key it was written
// under (e.g. slack.bot_token), the reference and where it was written.
type SecretUse struct {
	Key string
	Ref Secret
	At  yamlnode.Pos
}

// SecretUses lists every secret reference the config makes, in the order
// the config's sections are documented, so that a checker can say which of
// them would not load before serve needs them.
func (c *Config) SecretUses() []SecretUse {
	var uses []SecretUse
	add := func(key string, ref Secret, at Positions, atKey string) {
		if !ref.IsZero() {
			uses = append(uses, SecretUse{Key: key, Ref: ref, At: at.Of(atKey)})
		}
	}
	add("store", c.StoreDSN, c.At, "store")
	if s := c.Slack; s != nil {
		add("slack.bot_token", s.BotToken, s.At, "bot_token")
		add("slack.signing_secret", s.SigningSecret, s.At, "signing_secret")
		add("slack.app_token", s.AppToken, s.At, "app_token")
	}
	if a := c.Alerts; a != nil {
		add("alerts.bearer_token", a.BearerToken, a.At, "bearer_token")
		add("alerts.basic_auth.password", a.BasicPass, a.At, "basic_auth.password")
	}
	if w := c.Web; w != nil {
		add("web.link_secret", w.LinkSecret, w.At, "link_secret")
	}
	return uses
}

// SecretValues loads every secret the config refers to, for the redaction
// of everything runbot shows: a command whose output prints one must not
// put it in a channel, a page, a log or a recording. A PostgreSQL DSN is
// hidden whole and its password also on its own, as tools print it alone.
// A secret that does not load is left out and its error returned beside
// the others (serve stops on it; the CLI says what it could not hide).
func (c *Config) SecretValues() ([]secret.Value, error) {
	var out []secret.Value
	var errs []error
	for _, u := range c.SecretUses() {
		v, err := u.Ref.Load()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", u.Key, u.Ref, err))
			continue
		}
		out = append(out, v)
		if u.Key == "store" {
			if pw := dsnPassword(v.Reveal()); pw != "" {
				out = append(out, secret.New(pw))
			}
		}
	}
	return out, errors.Join(errs...)
}

// dsnPassword is the password a PostgreSQL DSN holds, in URL form
// (postgres://user:pw@host, ?password=pw) or keyword form (password=pw),
// or "" when it holds none.
func dsnPassword(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if u.User != nil {
			if pw, ok := u.User.Password(); ok {
				return pw
			}
		}
		return u.Query().Get("password")
	}
	for _, f := range strings.Fields(dsn) {
		if k, v, ok := strings.Cut(f, "="); ok && k == "password" {
			return strings.Trim(v, "'")
		}
	}
	return ""
}
