package sim

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Inventory renders DIR/inventory.yaml, the runbot inventory of this deployment.
// Its shape is a contract with runbot's inventory loader: a local host whose
// service manager is `sglang-sim ctl`, and one deployment with router, prefill and
// decode roles.
func (d *Deployment) Inventory() string {
	ctl := shellQuote(d.Binary) + " ctl --dir " + shellQuote(d.Dir)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("hosts:\n  local:\n    transport: local\n    service_manager:\n      type: command\n")
	b.WriteString("      # {unit} is replaced by the role's unit name (shell-quoted by runbot)\n")
	for _, verb := range []string{"restart", "start", "stop", "show"} {
		fmt.Fprintf(&b, "      %s: %s\n", verb, q(ctl+" "+verb+" {unit}"))
	}
	fmt.Fprintf(&b, "deployments:\n  %s:\n    roles:\n", d.Name)
	fmt.Fprintf(&b, "      router:  {host: local, unit: router,  url: %s}\n", q(d.URL("router")))
	for _, role := range []string{"prefill", "decode"} {
		fmt.Fprintf(&b, "      %-8s {host: local, unit: %-8s url: %s, metrics_url: %s, launch_script: %s, log_file: %s}\n",
			role+":", role+",", q(d.URL(role)), q(d.URL(role)+"/metrics"), yamlPath(d.Script(role)), yamlPath(d.LogFile(role)))
	}
	return b.String()
}

// yamlPath writes a path bare when YAML would read it back unchanged, quoted otherwise.
func yamlPath(p string) string {
	if strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./") == "" {
		return p
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// Endpoints renders DIR/endpoints.json.
func (d *Deployment) Endpoints() []byte {
	b, _ := json.MarshalIndent(map[string]string{
		"router": d.URL("router"), "prefill": d.URL("prefill"), "decode": d.URL("decode"),
	}, "", "  ")
	return append(b, '\n')
}

func (d *Deployment) writeDescriptors() error {
	if err := writeFileAtomic(filepath.Join(d.Dir, "endpoints.json"), d.Endpoints(), 0o644); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(d.Dir, "inventory.yaml"), []byte(d.Inventory()), 0o644)
}
