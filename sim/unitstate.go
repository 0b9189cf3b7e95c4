package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// UnitState is a role's systemd-like unit state, DIR/<role>.state.json. The
// supervisor of the role owns it; ctl reads it.
type UnitState struct {
	Invocation    string    `json:"invocation"`
	SupervisorPID int       `json:"supervisor_pid"`
	ActiveState   string    `json:"active_state"` // active, inactive, failed, activating, deactivating
	SubState      string    `json:"sub_state"`    // running, dead, failed
	Result        string    `json:"result"`       // success, exit-code, signal
	MainPID       int       `json:"main_pid"`
	ExecMainPID   int       `json:"exec_main_pid"`
	ExecMainCode  int       `json:"exec_main_code"` // 1 = exited, 2 = killed (CLD_* as systemd reports)
	ExecMainState int       `json:"exec_main_status"`
	NRestarts     int       `json:"n_restarts"`
	ActiveEnter   time.Time `json:"active_enter"`
	InactiveEnter time.Time `json:"inactive_enter"`
}

func readUnitState(path string) (UnitState, error) {
	var s UnitState
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return UnitState{ActiveState: "inactive", SubState: "dead", Result: "success"}, nil
	}
	if err != nil {
		return s, fmt.Errorf("read unit state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("parse unit state %s: %w", path, err)
	}
	return s, nil
}

func writeUnitState(path string, s UnitState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode unit state: %w", err)
	}
	return writeFileAtomic(path, append(b, '\n'), 0o644)
}

// effective corrects a recorded state against reality: a unit recorded as active
// whose main process and supervisor are both gone (someone killed the supervisor)
// is failed. While the supervisor lives it records the outcome itself.
func (s UnitState) effective() UnitState {
	if s.ActiveState == "active" && !alive(s.MainPID) && !alive(s.SupervisorPID) {
		s.ActiveState, s.SubState, s.Result, s.MainPID = "failed", "failed", "signal", 0
	}
	return s
}

// systemdTime renders a timestamp as `systemctl show` does, e.g.
// "Sun 2026-11-29 08:30:00 UTC"; the zero time renders empty.
func systemdTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("Mon 2006-01-02 15:04:05 MST")
}

// Show renders the unit like `systemctl show UNIT`, one Key=Value per line.
func (s UnitState) Show(unit string) string {
	s = s.effective()
	lines := []string{
		"Id=" + unit + ".service",
		"Names=" + unit + ".service",
		"LoadState=loaded",
		"ActiveState=" + s.ActiveState,
		"SubState=" + s.SubState,
		"Result=" + s.Result,
		"MainPID=" + strconv.Itoa(s.MainPID),
		"ExecMainPID=" + strconv.Itoa(s.ExecMainPID),
		"ExecMainCode=" + strconv.Itoa(s.ExecMainCode),
		"ExecMainStatus=" + strconv.Itoa(s.ExecMainState),
		"NRestarts=" + strconv.Itoa(s.NRestarts),
		"ActiveEnterTimestamp=" + systemdTime(s.ActiveEnter),
		"InactiveEnterTimestamp=" + systemdTime(s.InactiveEnter),
		"InvocationID=" + s.Invocation,
	}
	return strings.Join(lines, "\n") + "\n"
}
