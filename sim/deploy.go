package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Roles of a deployment, in start order: prefill before decode (decode caches its
// prefill session), the router last.
var Roles = []string{"prefill", "decode", "router"}

// Deployment is the on-disk description of a simulated PD deployment, DIR/sim.json.
// `up` writes it; `ctl` and `down` read it.
type Deployment struct {
	Dir           string `json:"dir"`
	Name          string `json:"name"`
	Scenario      string `json:"scenario"`
	Binary        string `json:"binary"`
	Host          string `json:"host"`
	RouterPort    int    `json:"router_port"`
	PrefillPort   int    `json:"prefill_port"`
	BootstrapPort int    `json:"bootstrap_port"`
	DecodePort    int    `json:"decode_port"`
	Restart       string `json:"restart"` // "no" or "on-failure", like systemd's Restart=
	// WedgeBurst is the decode's --sim-wedge-burst, the default size of the abort
	// burst `ctl fault pd-wedge` sends.
	WedgeBurst int `json:"wedge_burst"`
	// DecodeLogInterval is the --decode-log-interval written into serve_decode.sh.
	DecodeLogInterval int      `json:"decode_log_interval"`
	EngineArgs        []string `json:"engine_args,omitempty"`
	Env               []string `json:"env,omitempty"` // extra "export K=V" lines for the engine scripts
	// Profile is the SGLang build impersonated (see profile.go); "" is the default.
	Profile string `json:"profile,omitempty"`
	// Era is the log wording, the profile's unless --log-format overrode it.
	Era string `json:"era,omitempty"`
	// TransferBackend is the engines' --disaggregation-transfer-backend.
	TransferBackend string `json:"transfer_backend,omitempty"`
	// MetricsOff leaves --enable-metrics out of the engine scripts.
	MetricsOff bool `json:"metrics_off,omitempty"`
	// Overlap is how the overlap schedule is set: on, flag, config or forced.
	Overlap string `json:"overlap,omitempty"`
	// LogTZ, when set, is exported as TZ to the engines: their log time zone.
	LogTZ      string   `json:"log_tz,omitempty"`
	RouterArgs []string `json:"router_args,omitempty"`
}

// Overlap settings of `up --overlap`.
const (
	OverlapOn     = "on"     // the flag absent: the overlap scheduler runs (SGLang's default)
	OverlapFlag   = "flag"   // --disable-overlap-schedule on the command line
	OverlapConfig = "config" // disable-overlap-schedule: true in a --config YAML
	OverlapForced = "forced" // SGLang forces it off: EAGLE speculative decoding
)

// overlap is the deployment's effective overlap setting; the "fixed" scenario is
// the flag.
func (d *Deployment) overlap() string {
	if d.Overlap == "" || d.Overlap == OverlapOn {
		if d.Scenario == ScenarioFixed {
			return OverlapFlag
		}
		return OverlapOn
	}
	return d.Overlap
}

// ConfigFile is the --config YAML of an engine role (--overlap config).
func (d *Deployment) ConfigFile(role string) string {
	return filepath.Join(d.Dir, role+"-config.yaml")
}

func deploymentFile(dir string) string { return filepath.Join(dir, "sim.json") }

// LoadDeployment reads DIR/sim.json.
func LoadDeployment(dir string) (*Deployment, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	b, err := os.ReadFile(deploymentFile(abs))
	if err != nil {
		return nil, fmt.Errorf("no simulated deployment in %s (run sglang-sim up --dir %s): %w", abs, dir, err)
	}
	var d Deployment
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("parse %s: %w", deploymentFile(abs), err)
	}
	d.Dir = abs
	return &d, nil
}

func (d *Deployment) save() error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encode deployment: %w", err)
	}
	return writeFileAtomic(deploymentFile(d.Dir), append(b, '\n'), 0o644)
}

// URL is the HTTP base URL of a role.
func (d *Deployment) URL(role string) string {
	port := map[string]int{"router": d.RouterPort, "prefill": d.PrefillPort, "decode": d.DecodePort}[role]
	return "http://" + d.Host + ":" + strconv.Itoa(port)
}

// Script is the launch script of a role.
func (d *Deployment) Script(role string) string {
	return filepath.Join(d.Dir, "serve_"+role+".sh")
}

// LogFile receives a role's stdout: its SGLang-format log, appended across restarts.
func (d *Deployment) LogFile(role string) string { return filepath.Join(d.Dir, role+".log") }

// SimLogFile receives a role's stderr: the simulator's own diagnostics.
func (d *Deployment) SimLogFile(role string) string { return filepath.Join(d.Dir, role+".sim.log") }

// PIDFile holds the role's MainPID while it runs.
func (d *Deployment) PIDFile(role string) string { return filepath.Join(d.Dir, role+".pid") }

// StateFile holds the role's unit state, kept by its supervisor.
func (d *Deployment) StateFile(role string) string { return filepath.Join(d.Dir, role+".state.json") }

func validRole(role string) error {
	for _, r := range Roles {
		if r == role {
			return nil
		}
	}
	return fmt.Errorf("unknown role %q (want prefill, decode or router)", role)
}

// writeFileAtomic replaces path so that readers never see a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone already after a successful rename
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
