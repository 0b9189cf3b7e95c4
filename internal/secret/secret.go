// Package secret holds references to secrets (an environment variable or a
// file, never the value) and loaded secret values that refuse to be printed,
// logged or encoded.
package secret

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// Ref says where a secret comes from: an environment variable or a
// file, never the value itself, so that configuration files can be shared
// and logged.
type Ref struct {
	Env  string `yaml:"env,omitempty" json:"env,omitempty"`
	File string `yaml:"file,omitempty" json:"file,omitempty"`
}

// IsZero reports whether no source is set.
func (r Ref) IsZero() bool { return r.Env == "" && r.File == "" }

// String names the source, never the value.
func (r Ref) String() string {
	switch {
	case r.Env != "":
		return "env " + r.Env
	case r.File != "":
		return "file " + r.File
	}
	return "(unset)"
}

// Load reads the secret. A file's trailing newline is dropped.
func (r Ref) Load() (Value, error) {
	switch {
	case r.Env != "" && r.File != "":
		return Value{}, fmt.Errorf("secret: set env or file, not both (env %s, file %s)", r.Env, r.File)
	case r.Env != "":
		v, ok := os.LookupEnv(r.Env)
		if !ok || strings.TrimSpace(v) == "" {
			return Value{}, fmt.Errorf("secret: environment variable %s is not set", r.Env)
		}
		return Value{v: strings.TrimSpace(v)}, nil
	case r.File != "":
		b, err := os.ReadFile(r.File)
		if err != nil {
			// The error names the file only: os errors never hold contents.
			return Value{}, fmt.Errorf("secret: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return Value{}, fmt.Errorf("secret: file %s is empty", r.File)
		}
		return Value{v: v}, nil
	}
	return Value{}, errors.New("secret: no env or file given")
}

// Value is a loaded secret. Printing or logging it shows [redacted]; only
// Reveal gives the value, for the one call that needs it.
type Value struct{ v string }

// New wraps a secret value, e.g. one read elsewhere or made in a test.
func New(v string) Value { return Value{v: v} }

// Reveal returns the secret's value.
func (s Value) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Value) IsZero() bool { return s.v == "" }

// String implements fmt.Stringer without the value.
func (s Value) String() string { return "[redacted]" }

// GoString keeps %#v from printing the value.
func (s Value) GoString() string { return "secret.Value{[redacted]}" }

// LogValue keeps slog from printing the value.
func (s Value) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalJSON keeps JSON encodings from holding the value.
func (s Value) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }
