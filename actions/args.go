package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

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
