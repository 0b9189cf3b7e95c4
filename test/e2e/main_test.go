//go:build e2e

// Package e2e holds runbot's end-to-end tests: runbot against real,
// systemd-booted test hosts (test/testhost) that run the incident's simulated
// SGLang PD deployment. Run them as root with
//
//	go test -tags e2e ./test/e2e/
package e2e

import (
	"os"
	"testing"

	"github.com/runbot/runbot/test/e2e/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }
