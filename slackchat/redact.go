package slackchat

import "github.com/runbot/runbot/internal/redact"

// Redactor removes secrets from text before it is posted to Slack. It is
// package redact's, so that the web report pages hide exactly what Slack
// hides.
type Redactor = redact.Redactor

// NewRedactor compiles the default patterns, the given ones, and a literal
// pattern for each of the given secret values (the bot's own tokens).
func NewRedactor(patterns []string, secrets ...Secret) (*Redactor, error) {
	return redact.New(patterns, secrets...)
}
