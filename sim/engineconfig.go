package sim

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// EngineConfig is what an engine process is launched with: the sglang.launch_server
// flags the simulator models, plus simulator-only knobs (--sim-*).
type EngineConfig struct {
	ModelPath       string
	ServedModelName string
	Host            string
	Port            int
	Mode            string // "prefill" or "decode"
	TransferBackend string
	BootstrapPort   int
	// DisableOverlap is the EFFECTIVE disable_overlap_schedule: the flag, a --config
	// file setting it, or SGLang forcing it (see applyForcedOverlap).
	DisableOverlap bool
	EnableMetrics  bool
	// SpeculativeAlgorithm is --speculative-algorithm (NEXTN is rewritten to EAGLE).
	SpeculativeAlgorithm string
	// ConfigFile is the --config YAML merged into the command line.
	ConfigFile        string
	DecodeLogInterval int
	Watchdog          WatchdogSetting // --watchdog-timeout (SGLang: 300 s), see wedge.go
	Topology          Topology
	Extra             []ExtraFlag
	// Notes are the lines SGLang's argument post-processing logs before the
	// server_args dump (e.g. the overlap schedule being forced off).
	Notes []string

	Sim SimKnobs
}

// SimKnobs are the simulator's own settings. They scale time so that tests run in
// seconds, and select faults at start.
type SimKnobs struct {
	// TokenRate is the decode pace per running request, in tokens per second; one
	// decode iteration produces one token for every running request.
	TokenRate float64
	// PrefillRate is the prefill pace in prompt tokens per second.
	PrefillRate float64
	// IdleRefresh is how often an idle scheduler rewrites its gauges (SGLang: 30 s).
	IdleRefresh time.Duration
	// LogEra selects the wording of batch lines.
	LogEra LogEra
	// WedgeBurst is how many in-flight transfer aborts within WedgeWindow wedge a
	// decode that runs the overlap schedule.
	WedgeBurst  int
	WedgeWindow time.Duration
	// DefaultMaxTokens applies when a request names no max_tokens.
	DefaultMaxTokens int
	// KVBytesPerToken sizes the KV payload prefill really sends to decode.
	KVBytesPerToken int
	// MaxTotalTokens is the KV pool size per DP rank, the denominator of token usage.
	MaxTotalTokens int
	// Faults are applied right after the engine is ready.
	Faults []string
	// Profile is the SGLang build impersonated (--sim-profile); it decides the log
	// era (unless --sim-log-format overrides it), metric spellings and endpoints.
	Profile Profile
	// RequestIDs is "engine" (SGLang mints every rid, only a body "rid" is
	// honoured) or "client" (X-Request-Id, then the body's rid or user, as older
	// simulator tests expect).
	RequestIDs string
	// AbortLatency is how long after a client's disconnect the abort is processed.
	AbortLatency LatencyRange
}

// Request-id modes of --sim-request-ids.
const (
	RequestIDsEngine = "engine"
	RequestIDsClient = "client"
)

// defaultEngineConfig mirrors SGLang's ServerArgs defaults where the simulator has an
// equivalent.
func defaultEngineConfig() EngineConfig {
	return EngineConfig{
		ModelPath:         "/models/sim-model",
		Host:              "127.0.0.1",
		Port:              30000,
		TransferBackend:   "mooncake",
		BootstrapPort:     8998,
		DecodeLogInterval: 40,
		Watchdog:          WatchdogSetting{Seconds: 300},
		Topology:          Topology{TPSize: 1, DPSize: 1},
		Sim: SimKnobs{
			TokenRate:        40,
			PrefillRate:      50000,
			IdleRefresh:      30 * time.Second,
			LogEra:           DefaultEra,
			WedgeBurst:       8,
			WedgeWindow:      500 * time.Millisecond,
			DefaultMaxTokens: 32,
			KVBytesPerToken:  64,
			MaxTotalTokens:   524288,
			RequestIDs:       RequestIDsEngine,
		},
	}
}

// ParseEngineArgs parses an engine command line the way sglang.launch_server would,
// warning about (and otherwise ignoring) every flag the simulator does not model.
func ParseEngineArgs(args []string, log *slog.Logger) (EngineConfig, error) {
	c := defaultEngineConfig()
	era, profile, abortLatency := "", "", ""
	args, cfgFile, err := mergeConfigFile(args)
	if err != nil {
		return c, err
	}
	c.ConfigFile = cfgFile
	specs := map[string]flagSpec{
		"model-path":                      setString(&c.ModelPath),
		"served-model-name":               setString(&c.ServedModelName),
		"host":                            setString(&c.Host),
		"port":                            setInt(&c.Port),
		"disaggregation-mode":             setString(&c.Mode),
		"disaggregation-transfer-backend": setString(&c.TransferBackend),
		"disaggregation-bootstrap-port":   setInt(&c.BootstrapPort),
		"disable-overlap-schedule":        setBool(&c.DisableOverlap),
		"enable-metrics":                  setBool(&c.EnableMetrics),
		"decode-log-interval":             setInt(&c.DecodeLogInterval),
		"watchdog-timeout":                setWatchdog(&c.Watchdog),
		"tp-size":                         setInt(&c.Topology.TPSize),
		"tp":                              setInt(&c.Topology.TPSize),
		"dp-size":                         setInt(&c.Topology.DPSize),
		"dp":                              setInt(&c.Topology.DPSize),
		"enable-dp-attention":             setBool(&c.Topology.DPAttention),
		"sim-token-rate":                  setFloat(&c.Sim.TokenRate),
		"sim-prefill-rate":                setFloat(&c.Sim.PrefillRate),
		"sim-idle-refresh":                setDuration(&c.Sim.IdleRefresh),
		"sim-log-format":                  setString(&era),
		"sim-wedge-burst":                 setInt(&c.Sim.WedgeBurst),
		"sim-wedge-window":                setDuration(&c.Sim.WedgeWindow),
		"sim-default-max-tokens":          setInt(&c.Sim.DefaultMaxTokens),
		"sim-kv-bytes-per-token":          setInt(&c.Sim.KVBytesPerToken),
		"sim-max-total-tokens":            setInt(&c.Sim.MaxTotalTokens),
		"sim-fault":                       setStrings(&c.Sim.Faults),
		"sim-profile":                     setString(&profile),
		"sim-request-ids":                 setString(&c.Sim.RequestIDs),
		"sim-abort-latency":               setString(&abortLatency),
		"speculative-algorithm":           setString(&c.SpeculativeAlgorithm),
	}
	extra, positional, err := parseTolerant(args, specs)
	if err != nil {
		return c, err
	}
	for _, e := range extra {
		log.Warn("ignoring sglang flag the simulator does not model", "flag", "--"+e.Name, "value", e.Value)
	}
	for _, p := range positional {
		log.Warn("ignoring positional argument", "arg", p)
	}
	c.Extra = extra
	if c.Sim.Profile, err = LookupProfile(profile); err != nil {
		return c, fmt.Errorf("--sim-profile: %w", err)
	}
	c.Sim.LogEra = c.Sim.Profile.Era
	if era != "" {
		if c.Sim.LogEra, err = ParseLogEra(era); err != nil {
			return c, err
		}
	}
	c.Sim.AbortLatency = c.Sim.Profile.AbortLatency
	if abortLatency != "" {
		if c.Sim.AbortLatency, err = ParseLatencyRange(abortLatency); err != nil {
			return c, fmt.Errorf("--sim-abort-latency: %w", err)
		}
	}
	if c.ServedModelName == "" {
		c.ServedModelName = c.ModelPath
	}
	c.applyForcedOverlap(os.Getenv("SGLANG_ENABLE_SPEC_V2"))
	return c, c.validate()
}

// applyForcedOverlap is the part of SGLang's ServerArgs post-processing that turns
// the overlap schedule off whatever the flags say: EAGLE-family speculative
// decoding before spec-v2 (server_args.py, _handle_speculative_decoding). With
// SGLANG_ENABLE_SPEC_V2 set, EAGLE instead forces it on, on the builds that have
// spec-v2. specV2 is that variable's value.
func (c *EngineConfig) applyForcedOverlap(specV2 string) {
	algo := strings.ToUpper(c.SpeculativeAlgorithm)
	if algo == "NEXTN" {
		// NEXTN shares EAGLE's implementation and is renamed to it.
		algo = "EAGLE"
	}
	if c.SpeculativeAlgorithm != "" {
		c.SpeculativeAlgorithm = algo
	}
	switch algo {
	case "EAGLE", "EAGLE3", "STANDALONE":
	default:
		return
	}
	v2 := c.Sim.Profile.EagleOverlapMsg == eagleOverlapMsgNew && envTrue(specV2)
	switch {
	case v2 && algo == "EAGLE":
		c.DisableOverlap = false
		c.Notes = append(c.Notes, "Beta spec is enabled for eagle speculative decoding and overlap schedule is turned on.")
	case v2:
		// spec-v2 leaves EAGLE3 and STANDALONE to the flags.
	default:
		c.DisableOverlap = true
		c.Notes = append(c.Notes, c.Sim.Profile.EagleOverlapMsg)
	}
}

// envTrue reads an SGLang boolean environment variable (EnvBool: 1/true/yes/on).
func envTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y", "t":
		return true
	}
	return false
}

func (c EngineConfig) validate() error {
	switch c.Mode {
	case "prefill", "decode":
	case "", "null":
		return fmt.Errorf("--disaggregation-mode must be prefill or decode: the simulator only models PD engines")
	default:
		return fmt.Errorf("invalid --disaggregation-mode %q (choose from null, prefill, decode)", c.Mode)
	}
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("invalid --port %d", c.Port)
	case c.Topology.TPSize < 1 || c.Topology.DPSize < 1:
		return fmt.Errorf("--tp-size and --dp-size must be at least 1")
	case c.DecodeLogInterval < 1:
		return fmt.Errorf("--decode-log-interval must be at least 1")
	case c.Sim.TokenRate <= 0 || c.Sim.PrefillRate <= 0:
		return fmt.Errorf("--sim-token-rate and --sim-prefill-rate must be positive")
	case c.Sim.WedgeBurst < 1:
		return fmt.Errorf("--sim-wedge-burst must be at least 1")
	case c.Sim.IdleRefresh <= 0:
		return fmt.Errorf("--sim-idle-refresh must be positive")
	case c.Sim.RequestIDs != RequestIDsEngine && c.Sim.RequestIDs != RequestIDsClient:
		return fmt.Errorf("--sim-request-ids must be engine or client, not %q", c.Sim.RequestIDs)
	}
	for _, f := range c.Sim.Faults {
		if _, err := ParseFault([]byte(`{"fault":` + strconv.Quote(f) + `}`)); err != nil {
			return fmt.Errorf("--sim-fault: %w", err)
		}
	}
	return nil
}

// envDuration reads a seconds-valued SGLang environment variable such as
// SGLANG_HEALTH_CHECK_TIMEOUT, falling back to def when unset or malformed.
func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return def
	}
	return time.Duration(f * float64(time.Second))
}
