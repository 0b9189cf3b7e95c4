package slackchat

import (
	"context"
	"fmt"
)

// Ping calls auth.test with the bot token: Slack answers, and the token
// is still good. It is the daemon's readiness probe for Slack; the error
// names Slack's answer, never the token.
func (s *Slack) Ping(ctx context.Context) error {
	if _, err := s.api.AuthTestContext(ctx); err != nil {
		return fmt.Errorf("slack auth.test: %w", err)
	}
	return nil
}
