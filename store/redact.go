package store

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// redactedPassword stands for a password in what the store prints.
const redactedPassword = "xxxxx"

// kvPassword finds the password in a "key=value" connection string: a bare
// word or a single-quoted value with backslash escapes.
var kvPassword = regexp.MustCompile(`(password\s*=\s*)('(?:\\.|[^'\\])*'|\S+)`)

// RedactDSN returns a store location fit for logs and errors: a URL's
// password, or a connection string's password=..., is replaced by xxxxx.
// Everything else (user, host, database) stays, to tell stores apart.
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return redactUserinfo(kvPassword.ReplaceAllString(dsn, "${1}"+redactedPassword))
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redactedPassword)
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", redactedPassword)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactUserinfo redacts what would be a URL's password in text that does
// not parse as a URL: after the scheme, between the first ':' and the last
// '@' of the authority.
func redactUserinfo(s string) string {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || strings.ContainsAny(scheme, " =/") {
		return s
	}
	prefix := scheme + ":"
	if strings.HasPrefix(rest, "//") {
		prefix, rest = prefix+"//", rest[2:]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return s
	}
	user, _, hasPw := strings.Cut(authority[:at], ":")
	if !hasPw {
		return s
	}
	return prefix + user + ":" + redactedPassword + authority[at:] + path
}

// dsnPasswords lists the spellings of dsn's password that an error from
// the driver might quote: as given, and URL-decoded.
func dsnPasswords(dsn string) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != redactedPassword {
			out = append(out, p)
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if u.User != nil {
			p, _ := u.User.Password()
			add(p)
			add(url.UserPassword("", p).String()[1:])
		}
		add(u.Query().Get("password"))
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		add(m[2])
		add(strings.Trim(m[2], "'"))
	}
	// A raw userinfo the URL parser refused (or read as opaque) still
	// holds the password between the first ':' and the last '@' of the
	// authority.
	if scheme, rest, ok := strings.Cut(dsn, ":"); ok && !strings.ContainsAny(scheme, " =/") {
		rest = strings.TrimPrefix(rest, "//")
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		if at := strings.LastIndexByte(rest, '@'); at > 0 {
			if _, p, ok := strings.Cut(rest[:at], ":"); ok {
				add(p)
			}
		}
	}
	return out
}

// redactedError is an error whose text has the store's password removed.
// It unwraps to the cause, so callers can still branch on it with
// errors.Is and errors.As; only its text is redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr removes dsn's password from err's text.
func redactErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range dsnPasswords(dsn) {
		msg = strings.ReplaceAll(msg, p, redactedPassword)
	}
	var already *redactedError
	if msg == err.Error() && errors.As(err, &already) {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
