package actions

import (
	"maps"
	"slices"
)

// registry lists every action type. Adding an action means adding one line
// here and one file beside this one.
var registry = map[string]Type{
	"command":         commandActionType,
	"config_edit":     configEditType,
	"daemon_reload":   daemonReloadType,
	"systemd_restart": systemdRestartType,
}

// Lookup returns the action type with the given name.
func Lookup(name string) (Type, bool) {
	t, ok := registry[name]
	return t, ok
}

// Names lists the registered action types, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(registry))
}
