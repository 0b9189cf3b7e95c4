package checks

import (
	"maps"
	"slices"
)

// registry lists every check type. Adding a check means adding one line here
// and one file beside this one.
var registry = map[string]Type{
	"command":        commandType,
	"flag":           flagType,
	"grep_config":    grepConfigType,
	"http_probe":     httpProbeType,
	"log_progress":   logProgressType,
	"metrics_sample": metricsSampleType,
	"read_file":      readFileType,
	"unit_state":     unitStateType,
}

// Lookup returns the check type with the given name.
func Lookup(name string) (Type, bool) {
	t, ok := registry[name]
	return t, ok
}

// Names lists the registered check types, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(registry))
}
