package config

import "github.com/runbot/runbot/internal/yamlnode"

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
	return uses
}
