package store

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ownerLive is the rule every process applies to the owner of a row: the
// lease decides, except that a process on this host that is gone is dead
// at once, and an owner without a lease is judged by the host-local check.
func TestOwnerLive(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	local, remote := host+"/4242/99", "elsewhere.example/4242/99"
	for _, tc := range []struct {
		name     string
		owner    string
		lease    time.Duration // from now; only with hasLease
		hasLease bool
		pidAlive bool
		want     bool
	}{
		{"self", selfOwner, 0, false, false, true},
		{"no lease, pid alive", local, 0, false, true, true},
		{"no lease, pid gone", local, 0, false, false, false},
		{"remote, unexpired lease", remote, time.Second, true, false, true},
		{"remote, expired lease", remote, 0, true, true, false},
		{"local, unexpired lease, pid alive", local, time.Second, true, true, true},
		{"local, unexpired lease, pid gone", local, time.Second, true, false, false},
		{"local, expired lease, pid alive", local, -time.Second, true, true, false},
		{"test owner, unexpired lease", "storetest/replica-a", time.Second, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alive := func(string) bool { return tc.pidAlive }
			require.Equal(t, tc.want, ownerLive(tc.owner, selfOwner, now.Add(tc.lease), tc.hasLease, now, alive))
		})
	}
}
