package slackrec

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SignedPost is the form POST to target that Slack would make, signed with
// the app's signing secret as Slack signs its requests (v0, now): the way
// tests reach runbot's /slack/commands and /slack/interactions.
func SignedPost(ctx context.Context, target, secret string, form url.Values) (*http.Request, error) {
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	_, _ = fmt.Fprintf(mac, "v0:%s:%s", stamp, body) // a hash.Hash never fails a write
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", stamp)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return req, nil
}

// Click is a press of a button in a message runbot posted.
type Click struct {
	// User is the Slack user ID of who pressed it.
	User string
	// Channel and TS name the message the button is in.
	Channel, TS string
	// ActionID and Value are the button's ("runbot_approve", "plan|hash").
	ActionID, Value string
	// ResponseURL is where runbot may answer the click (ResponseURL).
	ResponseURL string
}

// Form is the form Slack posts for the click: a block_actions payload.
func (c Click) Form() (url.Values, error) {
	now := time.Now()
	payload, err := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": c.User, "username": strings.ToLower(c.User)},
		"team": map[string]any{"id": "T0TEAM"}, "channel": map[string]any{"id": c.Channel},
		"container":  map[string]any{"type": "message", "message_ts": c.TS, "channel_id": c.Channel},
		"message":    map[string]any{"type": "message", "ts": c.TS},
		"trigger_id": strconv.FormatInt(now.UnixNano(), 10), "response_url": c.ResponseURL,
		"actions": []map[string]any{{"type": "button", "action_id": c.ActionID, "block_id": "runbot_actions", "value": c.Value,
			"action_ts": fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000)}},
	})
	if err != nil {
		return nil, fmt.Errorf("encode the click's payload: %w", err)
	}
	return url.Values{"payload": {string(payload)}}, nil
}

// Request is the click as Slack posts it to runbotURL's interactions
// endpoint, signed with secret.
func (c Click) Request(ctx context.Context, runbotURL, secret string) (*http.Request, error) {
	form, err := c.Form()
	if err != nil {
		return nil, err
	}
	return SignedPost(ctx, strings.TrimSuffix(runbotURL, "/")+"/slack/interactions", secret, form)
}
