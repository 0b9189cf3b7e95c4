package schedule

import (
	"os"
	"testing"

	"github.com/runbot/runbot/store/storetest"
)

// TestMain stops the throwaway PostgreSQL cluster that the replica tests
// start on first use.
func TestMain(m *testing.M) { os.Exit(storetest.PostgresMain(m)) }
