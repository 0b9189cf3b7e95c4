package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOwnerAlive(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	start, ok := processStart(os.Getpid())
	require.True(t, ok, "/proc/self/stat must be readable")
	for owner, want := range map[string]bool{
		processOwner(): true,
		fmt.Sprintf("%s/%d/%s", host, os.Getpid(), start):  true,
		fmt.Sprintf("%s/%d/%s0", host, os.Getpid(), start): false, // a reused pid
		fmt.Sprintf("%s/%d/%s", host, os.Getppid(), "1"):   false,
		fmt.Sprintf("elsewhere/%d/%s", os.Getpid(), start): false,
		"":          false,
		"not-owner": false,
	} {
		require.Equal(t, want, ownerAlive(owner), owner)
	}
}

// Generated IDs retry on collision, which needs the driver's constraint
// error to be recognised.
func TestUniqueViolationIsRecognised(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "runbot.db"))
	require.NoError(t, err)
	defer func() { _ = s.Close() }() // test cleanup
	r := Run{ID: "r-1", Runbook: "x", Trigger: TriggerCLI}
	_, err = s.CreateRun(ctx, r)
	require.NoError(t, err)
	_, err = s.CreateRun(ctx, r)
	require.True(t, isUniqueViolation(err), "%v", err)
	_, _, err = s.CreatePlan(ctx, Plan{RunID: "r-missing", Remediation: "x", Deployment: "d", Hash: "h", Body: []byte(`{}`)})
	require.Error(t, err)
	require.False(t, isUniqueViolation(err), "a foreign key failure is not a collision")
}
