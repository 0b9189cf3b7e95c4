//go:build e2e

// Package e2e holds runbot's end-to-end tests: runbot against real,
// systemd-booted test hosts (test/testhost) that run the incident's simulated
// SGLang PD deployment. Run them as root with
//
//	go test -tags e2e ./test/e2e/
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/runbot/runbot/store/storetest"
	"github.com/runbot/runbot/test/e2e/testhost"
)

// TestMain brings the test hosts down after the tests when this binary
// brought them up, and stops the PostgreSQL cluster if a test started one.
func TestMain(m *testing.M) {
	code := testhost.Main(m)
	if err := storetest.StopPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
