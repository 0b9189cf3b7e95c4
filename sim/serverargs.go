package sim

import (
	"strconv"
	"strings"
)

// ServerArgsDump renders the "server_args=ServerArgs(…)" startup line SGLang logs,
// which operators grep for disaggregation_mode, disaggregation_transfer_backend and
// disable_overlap_schedule. Modelled fields come first, in ServerArgs order; flags the
// simulator only carries along follow, so the dump still reflects the whole command.
func (c EngineConfig) ServerArgsDump() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	add("model_path", pyStr(c.ModelPath))
	add("tokenizer_path", pyStr(c.ModelPath))
	add("host", pyStr(c.Host))
	add("port", strconv.Itoa(c.Port))
	add("served_model_name", pyStr(c.ServedModelName))
	add("tp_size", strconv.Itoa(c.Topology.TPSize))
	add("watchdog_timeout", c.Watchdog.Repr())
	add("dp_size", strconv.Itoa(c.Topology.DPSize))
	add("enable_dp_attention", pyBool(c.Topology.DPAttention))
	add("decode_log_interval", strconv.Itoa(c.DecodeLogInterval))
	add("enable_metrics", pyBool(c.EnableMetrics))
	spec := "None"
	if c.SpeculativeAlgorithm != "" {
		spec = pyStr(c.SpeculativeAlgorithm)
	}
	add("speculative_algorithm", spec)
	// The effective value: a --config file or SGLang's own post-processing
	// (speculative decoding) may have set it without the flag.
	add("disable_overlap_schedule", pyBool(c.DisableOverlap))
	add("disaggregation_mode", pyStr(c.Mode))
	add("disaggregation_transfer_backend", pyStr(c.TransferBackend))
	add("disaggregation_bootstrap_port", strconv.Itoa(c.BootstrapPort))
	for _, e := range c.Extra {
		key := strings.ReplaceAll(e.Name, "-", "_")
		switch {
		case e.Bool:
			add(key, "True")
		case isNumber(e.Value):
			add(key, e.Value)
		default:
			add(key, pyStr(e.Value))
		}
	}
	return "server_args=ServerArgs(" + strings.Join(parts, ", ") + ")"
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
