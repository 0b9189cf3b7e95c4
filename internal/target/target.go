// Package target describes where a step or action runs: one role of a
// deployment, resolved to a host and the ways to reach it.
package target

import "github.com/runbot/runbot/remote"

// Target is one resolved role of a deployment. Checks and actions receive it
// already bound to a live remote.Runner, so they never dial hosts themselves.
type Target struct {
	// Deployment and Role name what this is, e.g. "dsv4" and "decode".
	Deployment string
	Role       string
	// Host is the inventory name of the host the role runs on.
	Host string
	// Runner executes commands and opens tunnels on Host.
	Runner remote.Runner
	// Services manages Unit on Host (systemd, or a configured command set).
	Services remote.ServiceManager
	// Unit is the service (systemd unit) that runs the role.
	Unit string
	// URL is the role's HTTP base URL as seen from Host, e.g.
	// http://127.0.0.1:30001; MetricsURL its Prometheus endpoint.
	URL        string
	MetricsURL string
	// LaunchScript is the script the unit executes, e.g. /root/serve_dsv4_decode.sh.
	LaunchScript string
	// LogFile, when set, is read instead of the unit's journal.
	LogFile string
	// Labels are free-form inventory labels of the role and host.
	Labels map[string]string
}

// Name is how evidence and errors refer to the target: "decode@gpu-1".
func (t Target) Name() string {
	if t.Host == "" {
		return t.Role
	}
	return t.Role + "@" + t.Host
}
