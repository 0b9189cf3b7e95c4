package sim

import (
	"fmt"
	"sort"
	"strings"
)

// Scenarios `up --scenario` can start. Faults are injected after the deployment is
// serving, through the admin endpoint, so that a restart clears them the way a
// restart clears the real failure; "fixed" instead changes the launch scripts.
const (
	ScenarioHealthy      = "healthy"       // default: the incident's pre-fix config (overlap schedule on)
	ScenarioFixed        = "fixed"         // --disable-overlap-schedule in both serve scripts
	ScenarioWedged       = "wedged"        // healthy, then the pd-wedge abort burst
	ScenarioSlow         = "slow"          // prefill adds seconds to every time to first token
	ScenarioStaleSample  = "stale-sample"  // decode's next scrape shows num_running_reqs 2 while idle
	ScenarioPrefillStall = "prefill-stall" // prefill's forward pass hangs
	ScenarioDecodeCrash  = "decode-crash"  // decode exits non-zero
	ScenarioRouterDown   = "router-down"   // the router exits non-zero
)

// scenarioFaults maps each scenario to the fault injected once it serves.
var scenarioFaults = map[string]string{
	ScenarioHealthy:      "",
	ScenarioFixed:        "",
	ScenarioWedged:       FaultPDWedge,
	ScenarioSlow:         FaultSlow,
	ScenarioStaleSample:  FaultStaleSample,
	ScenarioPrefillStall: FaultPrefillStall,
	ScenarioDecodeCrash:  FaultDecodeCrash,
	ScenarioRouterDown:   FaultRouterDown,
}

func validScenario(name string) error {
	if _, ok := scenarioFaults[name]; ok {
		return nil
	}
	names := make([]string, 0, len(scenarioFaults))
	for n := range scenarioFaults {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("unknown scenario %q (want one of %s)", name, strings.Join(names, ", "))
}
