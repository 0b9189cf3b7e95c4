//go:build race

package sim_test

// raceEnabled makes TestMain build the simulator binary with the race detector too,
// so data races inside the simulated processes are caught by the same test run.
const raceEnabled = true
