package main

import (
	"os"
	"testing"

	"github.com/runbot/runbot/store/storetest"
)

// TestMain stops the throwaway PostgreSQL cluster that the failover test
// starts on first use.
func TestMain(m *testing.M) { os.Exit(storetest.PostgresMain(m)) }
