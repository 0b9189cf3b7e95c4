package alerts

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// alertAuth checks a webhook's credentials: a bearer token
// (Alertmanager's http_config.authorization) or basic auth (basic_auth).
// Comparisons hash both sides first, so that they take the same time
// whatever the lengths.
type alertAuth struct {
	bearer    [32]byte
	hasBearer bool
	user      [32]byte
	pass      [32]byte
	hasBasic  bool
}

func newAlertAuth(cfg Config) (alertAuth, error) {
	var a alertAuth
	if !cfg.BearerToken.IsZero() {
		tok, err := cfg.BearerToken.Load()
		if err != nil {
			return a, fmt.Errorf("alert webhook bearer token (%s): %w", cfg.BearerToken, err)
		}
		a.bearer, a.hasBearer = sha256.Sum256([]byte(tok.Reveal())), true
	}
	if cfg.BasicUser != "" || !cfg.BasicPass.IsZero() {
		if cfg.BasicUser == "" || cfg.BasicPass.IsZero() {
			return a, errors.New("alert webhook basic auth needs both a user and a password")
		}
		pass, err := cfg.BasicPass.Load()
		if err != nil {
			return a, fmt.Errorf("alert webhook basic auth password (%s): %w", cfg.BasicPass, err)
		}
		a.user, a.pass, a.hasBasic = sha256.Sum256([]byte(cfg.BasicUser)), sha256.Sum256([]byte(pass.Reveal())), true
	}
	if !a.hasBearer && !a.hasBasic {
		return a, errors.New("alert webhook needs a bearer token or basic auth: runbot does not take unauthenticated alerts")
	}
	return a, nil
}

// ok reports whether the request carries valid credentials.
func (a alertAuth) ok(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if a.hasBearer {
		if scheme, tok, found := strings.Cut(h, " "); found && strings.EqualFold(scheme, "Bearer") {
			sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
			if subtle.ConstantTimeCompare(sum[:], a.bearer[:]) == 1 {
				return true
			}
		}
	}
	if a.hasBasic {
		if user, pass, found := r.BasicAuth(); found {
			u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
			// Both compared, always, so that a right user with a wrong
			// password takes as long as anything else.
			uok := subtle.ConstantTimeCompare(u[:], a.user[:])
			pok := subtle.ConstantTimeCompare(p[:], a.pass[:])
			if uok&pok == 1 {
				return true
			}
		}
	}
	return false
}

// challenge names the schemes a 401 invites.
func (a alertAuth) challenge() string {
	var s []string
	if a.hasBearer {
		s = append(s, `Bearer realm="runbot"`)
	}
	if a.hasBasic {
		s = append(s, `Basic realm="runbot"`)
	}
	return strings.Join(s, ", ")
}
