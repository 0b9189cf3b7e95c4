package web

import (
	"maps"
	"slices"
	"strings"
)

// paramText shows params as key=value, sorted, as chat messages do.
func paramText(p map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if p[k] != "" {
			parts = append(parts, k+"="+p[k])
		}
	}
	return strings.Join(parts, " ")
}
