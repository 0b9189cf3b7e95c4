package config

import (
	"fmt"
	"os"
	"strings"
)

// Secret is a reference to a secret, never the secret itself: an
// environment variable or a file. It prints as <secret> wherever it is
// formatted, so logs and dumps cannot leak it.
type Secret struct {
	Env  string
	File string
}

// String implements fmt.Stringer.
func (s Secret) String() string { return "<secret>" }

// GoString keeps %#v from printing the reference's fields.
func (s Secret) GoString() string { return "<secret>" }

// MarshalText keeps JSON and YAML encoders from printing it.
func (s Secret) MarshalText() ([]byte, error) { return []byte("<secret>"), nil }

// IsSet reports whether a reference was configured.
func (s Secret) IsSet() bool { return s.Env != "" || s.File != "" }

// Value reads the secret. Errors name where it was looked for, never what
// was found.
func (s Secret) Value() (string, error) {
	switch {
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok || v == "" {
			return "", fmt.Errorf("secret: environment variable %s is not set", s.Env)
		}
		return v, nil
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return "", fmt.Errorf("secret: read %s: %w", s.File, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("secret: file %s is empty", s.File)
		}
		return v, nil
	}
	return "", fmt.Errorf("secret: not configured")
}
