// Package simtest gives tests the simulated SGLang deployment as real
// processes: the sglang-sim binary, built once per test binary, and
// deployments started with `sglang-sim up` and stopped when the test ends.
package simtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	once sync.Once
	bin  string
	err  error
)

// Binary builds cmd/sglang-sim once per test binary and returns its path.
// It is safe to call from parallel tests.
func Binary(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		dir, e := os.MkdirTemp("", "runbot-sim-") //nolint:usetesting // built once for every test of the binary, which outlives any one test
		if e != nil {
			err = e
			return
		}
		bin = filepath.Join(dir, "sglang-sim")
		// The binary outlives the first test that asks for it.
		if out, e := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "github.com/runbot/runbot/cmd/sglang-sim").CombinedOutput(); e != nil {
			err = fmt.Errorf("build the simulator: %w\n%s", e, out)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Run runs sglang-sim with args and returns its output; a failure fails
// the test with that output.
func Run(tb testing.TB, args ...string) string {
	tb.Helper()
	out, e := exec.CommandContext(tb.Context(), Binary(tb), args...).CombinedOutput()
	if e != nil {
		tb.Fatalf("sglang-sim %s: %v\n%s", strings.Join(args, " "), e, out)
	}
	return string(out)
}

// Up starts a deployment in a fresh directory, paced for tests (gauges
// refreshed every second, a decode batch line every 4 iterations), and
// stops it when the test ends. It returns the directory, which holds
// inventory.yaml and endpoints.json.
func Up(tb testing.TB, args ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	Run(tb, append([]string{"up", "--dir", dir, "--idle-refresh", "1s", "--decode-log-interval", "4"}, args...)...)
	tb.Cleanup(func() {
		// The test's context is already done when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = exec.CommandContext(ctx, Binary(tb), "down", "--dir", dir).Run()
	})
	return dir
}
