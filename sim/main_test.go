package sim_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// simBinary is the sglang-sim binary built once for all tests: the tests cross real
// process boundaries, exactly as runbot and an operator do.
var simBinary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sglang-sim-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "create temp dir:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }() // best-effort cleanup of a temp dir
	simBinary = filepath.Join(dir, "sglang-sim")
	args := []string{"build", "-o", simBinary}
	// SGLANG_SIM_RACE=1 builds the simulator itself with the race detector; the
	// deployments' cleanup then fails a test whose processes reported a data race.
	// It is opt-in because race-instrumented processes start several times slower.
	if os.Getenv("SGLANG_SIM_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/runbot/runbot/cmd/sglang-sim")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sglang-sim:", err)
		return 1
	}
	return m.Run()
}
