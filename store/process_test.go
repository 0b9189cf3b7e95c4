package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/store"
	"github.com/runbot/runbot/store/storetest"
)

// Two processes race to move the same approved plans to applying, as two
// bot replicas handling a double click would. Both get each plan ID at the
// same moment; every plan is won by exactly one of them, and the audit log
// shows exactly one applying move per plan.
func TestApplyCASAcrossProcesses(t *testing.T) {
	path := dbPath(t)
	s := openAt(t, path)
	const n = 25
	var ids []string
	for range n {
		// Creating a plan supersedes only proposed ones, so the approved
		// plans of earlier iterations stay approved.
		ids = append(ids, approve(t, s, mkPlan(t, s)).ID)
	}
	procs := []*child{startChild(t, "apply", path, ""), startChild(t, "apply", path, "")}
	for _, c := range procs {
		require.Equal(t, "ready", c.next())
	}
	won := make([]int, len(procs))
	for _, id := range ids {
		for _, c := range procs {
			c.send(id)
		}
		winners := 0
		for i, c := range procs {
			verdict, got, ok := strings.Cut(c.next(), " ")
			require.True(t, ok)
			require.Equal(t, id, got)
			if verdict == "won" {
				winners++
				won[i]++
			}
		}
		require.Equal(t, 1, winners, "plan %s must be applied by exactly one process", id)
	}
	for _, c := range procs {
		c.wait()
	}
	// How the wins split depends on scheduling; it is logged, not asserted.
	t.Logf("wins per process: %v", won)

	for _, id := range ids {
		p, err := s.GetPlan(testCtx(t), id)
		require.NoError(t, err)
		require.Equal(t, store.PlanApplying, p.State)
		moves := 0
		for _, k := range auditKinds(t, s, store.AuditFilter{PlanID: id}) {
			if k == store.AuditPlanState+":applying" {
				moves++
			}
		}
		require.Equal(t, 1, moves, "plan %s", id)
	}
}

// A lock taken by another process is refused with its holder, stays held
// after that process dies without releasing it, and is free once its lease
// has expired.
func TestLockAcrossProcesses(t *testing.T) {
	path := dbPath(t)
	// The child uses the real clock; the parent's fake clock starts at real
	// time so that the child's hour-long lease is current for it.
	c := storetest.NewClockAt(time.Now().UTC())
	s := openAt(t, path, store.WithNow(c.Now))

	holder := startChild(t, "lock", path, "")
	require.Equal(t, "ready", holder.next())
	holder.send("deployment/dsv4")
	f := strings.Fields(holder.next())
	require.Equal(t, []string{"won", "deployment/dsv4"}, f[:2])
	holderName := f[2]

	_, err := s.Acquire(testCtx(t), "deployment/dsv4", "parent", time.Minute)
	var locked *store.LockedError
	require.ErrorAs(t, err, &locked)
	require.Equal(t, holderName, locked.Holder)
	require.Equal(t, "deployment/dsv4", locked.Key)

	holder.wait() // the child exits without releasing
	_, err = s.Acquire(testCtx(t), "deployment/dsv4", "parent", time.Minute)
	require.ErrorAs(t, err, &locked, "a dead holder's lease lasts until it expires")

	c.Advance(time.Hour + time.Second)
	l, err := s.Acquire(testCtx(t), "deployment/dsv4", "parent", time.Minute)
	require.NoError(t, err)
	require.Equal(t, "parent", l.Holder)
}

// Two processes race for the same free locks, each key sent to both at the
// same moment: each lock goes to exactly one of them, and the other is told
// who has it.
func TestLockRaceAcrossProcesses(t *testing.T) {
	path := dbPath(t)
	openAt(t, path) // create the schema before the race
	procs := []*child{startChild(t, "lock", path, ""), startChild(t, "lock", path, "")}
	for _, c := range procs {
		require.Equal(t, "ready", c.next())
	}
	won := make([]int, len(procs))
	for i := range 20 {
		key := fmt.Sprintf("deployment/race-%02d", i)
		for _, c := range procs {
			c.send(key)
		}
		var winner, loserSaw []string
		for i, c := range procs {
			f := strings.Fields(c.next())
			require.Len(t, f, 3)
			require.Equal(t, key, f[1])
			if f[0] == "won" {
				winner = append(winner, f[2])
				won[i]++
			} else {
				loserSaw = append(loserSaw, f[2])
			}
		}
		require.Len(t, winner, 1, key)
		require.Equal(t, winner, loserSaw, "%s: the loser names the winner", key)
	}
	for _, c := range procs {
		c.wait()
	}
	t.Logf("wins per process: %v", won)
}
