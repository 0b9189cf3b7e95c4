package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Resolve returns path as it is to be opened from the working directory:
// unchanged when absolute (or empty), else joined to the directory of the
// file that names it. A config is installed in one place and run from
// another (systemd starts serve in /), so a path written beside the config
// must not depend on where serve was started.
func Resolve(file, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(file), path)
}

// resolveStore resolves a SQLite store's path against the config's
// directory, written as a path or as sqlite:path; a URL with an absolute
// path and a PostgreSQL URL are left as they are.
func resolveStore(file, loc string) string {
	scheme, rest, hasScheme := strings.Cut(loc, ":")
	switch {
	case loc == "":
		return loc
	case hasScheme && scheme == "sqlite":
		if strings.HasPrefix(rest, "/") || strings.ContainsAny(rest, "?#") {
			return loc
		}
		return "sqlite:" + Resolve(file, rest)
	case hasScheme && (scheme == "postgres" || scheme == "postgresql"), strings.Contains(loc, "://"):
		return loc
	}
	return Resolve(file, loc)
}

// CheckAddress reports whether addr is a host:port a listener can bind:
// the port given, and a number from 1 to 65535 or a TCP service name this
// host knows. net.Listen would take a missing port or port 0 as "any
// port", which no client could be told.
func CheckAddress(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
		// The AddrError repeats the address, which the caller shows.
		return errors.New(ae.Err)
	} else if err != nil {
		return err
	}
	if port == "" {
		return errors.New("the port is empty")
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			return fmt.Errorf("port %d is out of range", n)
		}
		return nil
	}
	// A service name is looked up in the host's services database, a
	// local read; the bound only keeps a broken resolver from hanging a
	// config load.
	ctx, cancel := context.WithTimeoutCause(context.Background(), 5*time.Second, errors.New("looking up the listen port's service name took too long"))
	defer cancel()
	if _, err := net.DefaultResolver.LookupPort(ctx, "tcp", port); err != nil {
		return fmt.Errorf("port %q is not a known TCP service on this host", port)
	}
	return nil
}

// SQLitePath is the file of a SQLite store, resolved as Resolve does, or ""
// when the store is PostgreSQL: what a checker looks at before serve
// creates the file and its directory.
func (c *Config) SQLitePath() string {
	if c.Store == "" {
		return ""
	}
	scheme, rest, hasScheme := strings.Cut(c.Store, ":")
	switch {
	case hasScheme && scheme == "sqlite":
		return strings.TrimPrefix(rest, "//")
	case strings.Contains(c.Store, "://"), hasScheme && (scheme == "postgres" || scheme == "postgresql"):
		return ""
	}
	return c.Store
}
