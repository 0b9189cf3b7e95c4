package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// linkParam is the query parameter a signed link carries: the expiry in
// Unix seconds and the signature, "EXP.SIG". One parameter, made of
// characters no chat platform escapes, so that a link pasted into Slack
// mrkdwn needs no escaping.
const linkParam = "l"

// linkClockSlack is how far the clocks of replicas that sign and verify
// links may disagree.
const linkClockSlack = time.Minute

// DefaultLinkTTL is how long a link in a chat message opens its run's page
// unless the config says otherwise: long enough for a postmortem a week
// after the incident.
const DefaultLinkTTL = 7 * 24 * time.Hour

// Errors of a link that does not open its page.
var (
	ErrNoLink      = errors.New("this page needs a signed link")
	ErrLinkExpired = errors.New("the link has expired")
	ErrLinkInvalid = errors.New("the link's signature does not match")
)

// LinkError says why a link was refused, for the person who followed it.
type LinkError struct {
	Err error
	// Expired is when an expired link stopped working.
	Expired time.Time
}

func (e *LinkError) Error() string {
	if !e.Expired.IsZero() {
		return fmt.Sprintf("%v (it expired %s)", e.Err, e.Expired.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return e.Err.Error()
}

func (e *LinkError) Unwrap() error { return e.Err }

// Signer makes and checks links to run pages: an HMAC-SHA256 over the run
// id and the link's expiry, so a link opens one run's page until it
// expires and cannot be turned into a link to another run or a later
// expiry.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewSigner signs with key; links last ttl (DefaultLinkTTL when zero) from
// now (time.Now when nil).
func NewSigner(key []byte, ttl time.Duration, now func() time.Time) (*Signer, error) {
	if len(key) < 16 {
		return nil, errors.New("link secret: want at least 16 bytes")
	}
	if ttl == 0 {
		ttl = DefaultLinkTTL
	}
	if ttl < 0 {
		return nil, fmt.Errorf("link ttl %s: want a positive duration", ttl)
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{key: append([]byte(nil), key...), ttl: ttl, now: now}, nil
}

// Sign returns the link parameter's value for run id, valid for the TTL
// from now.
func (s *Signer) Sign(runID string) string {
	exp := strconv.FormatInt(s.now().Add(s.ttl).Unix(), 10)
	return exp + "." + s.mac(runID, exp)
}

// Verify checks a link parameter's value for run id.
func (s *Signer) Verify(runID, value string) error {
	if value == "" {
		return &LinkError{Err: ErrNoLink}
	}
	exp, sig, ok := strings.Cut(value, ".")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil {
		return &LinkError{Err: ErrLinkInvalid}
	}
	// The signature is checked before the expiry, so that a tampered
	// link is never told apart from a genuine expired one.
	if !hmac.Equal([]byte(sig), []byte(s.mac(runID, exp))) {
		return &LinkError{Err: ErrLinkInvalid}
	}
	at := time.Unix(unix, 0).UTC()
	if !s.now().Before(at) {
		return &LinkError{Err: ErrLinkExpired, Expired: at}
	}
	// A link that lasts longer than the configured TTL allows from now
	// was made with a longer one (or with a leaked key): shortening
	// link_ttl takes effect on every link already posted.
	if at.After(s.now().Add(s.ttl + linkClockSlack)) {
		return &LinkError{Err: ErrLinkInvalid}
	}
	return nil
}

func (s *Signer) mac(runID, exp string) string {
	h := hmac.New(sha256.New, s.key)
	// The domain string keeps these signatures from meaning anything
	// elsewhere the same key might be used.
	h.Write([]byte("runbot run link v1\n" + runID + "\n" + exp))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// RunURL is the signed link to run id's page under base (the site's public
// URL, e.g. https://runbot.example.com/).
func (s *Signer) RunURL(base *url.URL, runID string) string {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/runs/" + url.PathEscape(runID)
	u.RawPath = ""
	u.RawQuery = linkParam + "=" + s.Sign(runID)
	u.Fragment = ""
	return u.String()
}
