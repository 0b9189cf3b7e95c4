package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Backend names a kind of store.
type Backend string

const (
	// BackendSQLite keeps the store in one SQLite file: the embedded
	// default, for one machine.
	BackendSQLite Backend = "sqlite"
	// BackendPostgres keeps the store in a PostgreSQL database that
	// several processes may share.
	BackendPostgres Backend = "postgres"
)

// Location is a parsed store location: which backend, and what it opens
// (the SQLite file's path, or the PostgreSQL DSN as given).
type Location struct {
	Backend Backend
	// Path is the SQLite file; DSN is the PostgreSQL connection URL.
	Path, DSN string
}

// String is the location fit for logs: a DSN's password is redacted.
func (l Location) String() string {
	if l.Backend == BackendPostgres {
		return RedactDSN(l.DSN)
	}
	return l.Path
}

// ParseLocation reads a store location: a file path ("/var/lib/runbot/
// runbot.db", "runbot.db") or "sqlite:///path" names a SQLite file;
// "postgres://..." or "postgresql://..." a PostgreSQL database. Errors
// never hold the location's password.
func ParseLocation(location string) (Location, error) {
	l, err := parseLocation(location)
	return l, redactErr(err, location)
}

func parseLocation(location string) (Location, error) {
	scheme, rest, hasScheme := strings.Cut(location, ":")
	switch {
	case location == "":
		return Location{}, errors.New("store location is empty: give a SQLite path or a postgres:// URL")
	case hasScheme && (scheme == "postgres" || scheme == "postgresql"):
		if !strings.HasPrefix(rest, "//") {
			return Location{}, fmt.Errorf("store location %s: a PostgreSQL location is a URL such as %s://host/database", RedactDSN(location), scheme)
		}
		return Location{Backend: BackendPostgres, DSN: location}, nil
	case hasScheme && scheme == "sqlite":
		u, err := url.Parse(location)
		switch {
		case err != nil:
			return Location{}, fmt.Errorf("store location %s: %w", RedactDSN(location), err)
		case u.Host != "" || u.User != nil:
			return Location{}, fmt.Errorf("store location %s: a SQLite URL names a file on this host: sqlite:///path", RedactDSN(location))
		case u.RawQuery != "" || u.Fragment != "":
			return Location{}, fmt.Errorf("store location %s: a SQLite URL takes no query or fragment", RedactDSN(location))
		}
		path := u.Path
		if u.Opaque != "" {
			path = u.Opaque // sqlite:runbot.db, relative
		}
		if path == "" {
			return Location{}, fmt.Errorf("store location %q names no file", location)
		}
		return Location{Backend: BackendSQLite, Path: path}, nil
	case strings.Contains(location, "://"):
		return Location{}, fmt.Errorf("store location %s: unknown scheme %q (want a SQLite path, sqlite:///path or postgres://host/database)",
			RedactDSN(location), scheme)
	}
	return Location{Backend: BackendSQLite, Path: location}, nil
}

// OpenURL opens the store at location (see ParseLocation) with opts:
// SQLite through Open, PostgreSQL through OpenPostgres. Errors never hold
// the location's password.
func OpenURL(ctx context.Context, location string, opts ...Option) (Store, error) {
	l, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if l.Backend == BackendPostgres {
		s, err := OpenPostgres(ctx, l.DSN, opts...)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := Open(ctx, l.Path, opts...)
	if err != nil {
		return nil, err
	}
	return s, nil
}
