package bot

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// SecretRef says where a secret comes from: an environment variable or a
// file, never the value itself, so that configuration files can be shared
// and logged.
type SecretRef struct {
	Env  string `yaml:"env,omitempty" json:"env,omitempty"`
	File string `yaml:"file,omitempty" json:"file,omitempty"`
}

// IsZero reports whether no source is set.
func (r SecretRef) IsZero() bool { return r.Env == "" && r.File == "" }

// String names the source, never the value.
func (r SecretRef) String() string {
	switch {
	case r.Env != "":
		return "env " + r.Env
	case r.File != "":
		return "file " + r.File
	}
	return "(unset)"
}

// Load reads the secret. A file's trailing newline is dropped.
func (r SecretRef) Load() (Secret, error) {
	switch {
	case r.Env != "" && r.File != "":
		return Secret{}, fmt.Errorf("secret: set env or file, not both (env %s, file %s)", r.Env, r.File)
	case r.Env != "":
		v, ok := os.LookupEnv(r.Env)
		if !ok || strings.TrimSpace(v) == "" {
			return Secret{}, fmt.Errorf("secret: environment variable %s is not set", r.Env)
		}
		return Secret{v: strings.TrimSpace(v)}, nil
	case r.File != "":
		b, err := os.ReadFile(r.File)
		if err != nil {
			// The error names the file only: os errors never hold contents.
			return Secret{}, fmt.Errorf("secret: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return Secret{}, fmt.Errorf("secret: file %s is empty", r.File)
		}
		return Secret{v: v}, nil
	}
	return Secret{}, errors.New("secret: no env or file given")
}

// Secret is a loaded secret. Printing or logging it shows [redacted]; only
// Reveal gives the value, for the one call that needs it.
type Secret struct{ v string }

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// String implements fmt.Stringer without the value.
func (s Secret) String() string { return "[redacted]" }

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return "bot.Secret{[redacted]}" }

// LogValue keeps slog from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// MarshalJSON keeps JSON encodings from holding the value.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }
