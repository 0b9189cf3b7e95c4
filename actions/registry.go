package actions

import (
	"errors"
	"fmt"

	"github.com/runbot/runbot/internal/registry"
)

// Registry is a set of action types by name: Default, or one a test or a
// plug-in makes with NewRegistry.
type Registry = registry.Registry[Type]

// Default is the registry of runbot's own action types, the one runbooks
// are loaded against unless a caller gives another. Adding an action
// means adding one line here and one file beside this one.
var Default = NewRegistry(map[string]Type{
	"command":         commandActionType,
	"config_edit":     configEditType,
	"daemon_reload":   daemonReloadType,
	"systemd_restart": systemdRestartType,
})

// NewRegistry is a registry of types, copied; what is registered in it
// later reaches no other registry.
func NewRegistry(types map[string]Type) *Registry {
	return registry.New("action", types, func(name string, t Type) error {
		switch {
		case t.Action == nil:
			return errors.New("it has no implementation")
		case t.Spec.Name != name:
			return fmt.Errorf("its spec is named %q", t.Spec.Name)
		}
		return nil
	})
}
