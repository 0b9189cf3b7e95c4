package slackchat

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Slack's request signing (docs.slack.dev/authentication/verifying-requests-from-slack).
const (
	headerSignature = "X-Slack-Signature"
	headerTimestamp = "X-Slack-Request-Timestamp"
	// replayWindow is how far a request's timestamp may be from now, in
	// either direction.
	replayWindow = 5 * time.Minute
	// maxBody bounds what is read before the signature is checked.
	maxBody = 1 << 20
)

// Reasons a request fails verification.
var (
	errNoSignature  = errors.New("missing signature or timestamp header")
	errBadSignature = errors.New("signature does not match")
	errStale        = errors.New("timestamp outside the 5 minute window")
)

// sign computes Slack's v0 signature: "v0=" + hex(HMAC-SHA256(secret,
// "v0:" + timestamp + ":" + body)).
func sign(secret []byte, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("v0:" + timestamp + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// verifier checks that a request comes from Slack.
type verifier struct {
	secret []byte
	now    func() time.Time
}

// verify checks the signature over the raw body and the timestamp's
// freshness, comparing in constant time.
func (v verifier) verify(h http.Header, body []byte) error {
	got, ts := h.Get(headerSignature), h.Get(headerTimestamp)
	if got == "" || ts == "" {
		return errNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", ts, errNoSignature)
	}
	if d := v.now().Sub(time.Unix(sec, 0)); d > replayWindow || d < -replayWindow {
		return errStale
	}
	if !hmac.Equal([]byte(got), []byte(sign(v.secret, ts, body))) {
		return errBadSignature
	}
	return nil
}

// verified reads the body (bounded), verifies the request and hands it on
// with the body restored. Anything unverified gets 401 and goes no
// further.
func (b *Receiver) verified(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			b.log.Warn("slack request refused: body unreadable", "path", r.URL.Path, "err", err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if err := b.verifier.verify(r.Header, body); err != nil {
			b.log.Warn("slack request refused: not verified", "path", r.URL.Path, "remote", r.RemoteAddr, "reason", err)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
