package config

import (
	"fmt"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/secret"
	"github.com/runbot/runbot/internal/yamlnode"
)

// decodeStore reads store: a SQLite path or URL, a PostgreSQL URL without a
// password, or a secret reference to a PostgreSQL DSN. A location that
// carries a password as plain text is refused without echoing it: it
// belongs in a secret.
func decodeStore(d *yamlnode.Decoder, n *yaml.Node) (string, Secret) {
	if n.Kind == yaml.MappingNode {
		return "", decodeSecret(d, n, "store")
	}
	loc := d.String(n, "store")
	scheme, _, hasScheme := strings.Cut(loc, ":")
	switch {
	case loc == "":
		d.Errorf(n, "store must not be empty")
	case hasScheme && (scheme == "postgres" || scheme == "postgresql"):
		u, err := url.Parse(loc)
		if err != nil {
			// Not echoed either: it may hold a password.
			d.Errorf(n, "store: not a valid PostgreSQL URL (not shown, as it may hold a password)")
			return "", Secret{}
		}
		if hasPassword(u) {
			d.Errorf(n, "store: this PostgreSQL URL holds a password; give the URL as a reference such as {env: NAME} or {file: /path}, never the secret itself")
			return "", Secret{}
		}
	case hasScheme && scheme == "sqlite":
	case strings.Contains(loc, "://"):
		// The text is not echoed: a URL of an unknown kind may hold a
		// password too.
		d.Errorf(n, "store: unknown scheme %q; give a SQLite path, sqlite:///path or a postgres:// URL", scheme)
		return "", Secret{}
	}
	return loc, Secret{}
}

// hasPassword reports whether a PostgreSQL URL carries a password, in its
// user info or as a password parameter.
func hasPassword(u *url.URL) bool {
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return true
		}
	}
	return u.Query().Has("password")
}

// StoreLocation is what to open the store from (store.OpenURL's argument):
// the store: text, or the DSN the store: reference points to. It is a
// secret.Value, so that the DSN's password never prints.
func (c *Config) StoreLocation() (secret.Value, error) {
	if c.StoreDSN.IsZero() {
		return secret.New(c.Store), nil
	}
	v, err := c.StoreDSN.Load()
	if err != nil {
		return secret.Value{}, fmt.Errorf("load the store DSN: %w", err)
	}
	return v, nil
}
