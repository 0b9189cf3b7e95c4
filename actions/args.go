package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"
	"time"

	"github.com/runbot/runbot/internal/argspec"
)

// withDefaults returns args with every absent argument set to its declared
// default. The engine fills defaults when it decodes a runbook, but an action
// must not misbehave when called with a partial set (a test, the CLI's ad-hoc
// mode), so every Plan goes through here.
func withDefaults(spec argspec.Spec, args argspec.Values) argspec.Values {
	out := make(argspec.Values, len(spec.Args))
	maps.Copy(out, args)
	for _, a := range spec.Args {
		if _, ok := out[a.Name]; !ok && a.Default != nil {
			out[a.Name] = a.Default
		}
	}
	return out
}

// clock returns env.Now, or the wall clock when the caller left it unset.
func clock(env Env) func() time.Time {
	if env.Now != nil {
		return env.Now
	}
	return time.Now
}

// fingerprint hashes the parts that identify what a plan was made against.
// The parts are joined with a NUL so that ("a b", "c") and ("a", "b c")
// differ.
func fingerprint(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// round makes a duration readable in details: milliseconds below ten seconds,
// whole seconds above.
func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
