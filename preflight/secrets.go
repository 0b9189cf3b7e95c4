package preflight

import (
	"fmt"
	"os"

	"github.com/runbot/runbot/config"
	"github.com/runbot/runbot/internal/yamlnode"
)

// minSecretLen is the fewest characters a configured secret may have.
const minSecretLen = 8

// Secrets reports, at the key that refers to it, each secret the
// config names that does not load, and each TLS file that cannot be read:
// what serve would stop on at start. They are warnings unless required,
// because --check also runs where the secrets are not (a CI job, a laptop
// before install); run as the service user, --secrets makes them errors.
// A secret's value is read and dropped, never shown: the message comes
// from secret.Ref.Load, which names the variable or the file only.
func Secrets(cfg *config.Config, required bool) yamlnode.Problems {
	severity := yamlnode.Warning
	if required {
		severity = yamlnode.Error
	}
	var ps yamlnode.Problems
	add := func(at yamlnode.Pos, format string, args ...any) {
		ps = append(ps, yamlnode.Problem{File: cfg.File, Line: at.Line, Col: at.Col, Severity: severity, Msg: fmt.Sprintf(format, args...)})
	}
	for _, u := range cfg.SecretUses() {
		// The message names the absolute path of a secret file, as a
		// relative one is read from the config's directory.
		if u.Ref.File != "" {
			u.Ref.File = abs(u.Ref.File)
		}
		v, err := u.Ref.Load()
		switch {
		case err != nil:
			add(u.At, "%s (%s) does not load: %v", u.Key, u.Ref, err)
		case len(v.Reveal()) < minSecretLen:
			// Every secret is redacted wherever it occurs: a short one
			// would be cut out of ordinary words in logs and messages
			// ("conte[redacted]t" for a token "x"), and guessed anyway.
			add(u.At, "%s (%s) is %d character(s) long: a secret must have at least %d (e.g. head -c 32 /dev/urandom | base64); a shorter one is guessable and would be redacted out of ordinary words",
				u.Key, u.Ref, len(v.Reveal()), minSecretLen)
		}
	}
	if cfg.TLS != nil {
		for key, path := range map[string]string{"tls.cert": cfg.TLS.Cert, "tls.key": cfg.TLS.Key} {
			if path == "" {
				continue // reported by the config's own check
			}
			f, err := os.Open(abs(path))
			if err != nil {
				add(cfg.At.Of(key), "%s: %v", key, err)
				continue
			}
			_ = f.Close() // opened only to know it can be
		}
	}
	return ps
}
