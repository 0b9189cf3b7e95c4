package store

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// An owner string names one process: "host/pid/start", where start is the
// process's start time in clock ticks since boot (/proc/<pid>/stat field 22).
// The start time makes a reused pid a different owner. SQLite in WAL mode
// only works for processes on one host, so a host-local liveness check is
// enough to tell a crashed owner from a live one.

var selfOwner = func() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _ := processStart(pid)
	return fmt.Sprintf("%s/%d/%s", host, pid, start)
}()

func processOwner() string { return selfOwner }

// processStart returns the start time of a live process, or false when the
// process does not exist or is a zombie (exited, not yet reaped).
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces, so
	// fields are counted from the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}

// ownerAlive reports whether the process named by owner still runs. An owner
// on another host, or one that cannot be parsed, counts as gone: runbot's
// store is host-local, so such rows can only be leftovers.
func ownerAlive(owner string) bool {
	if owner == selfOwner {
		return true
	}
	parts := strings.Split(owner, "/")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	start, ok := processStart(pid)
	return ok && start == parts[2]
}
