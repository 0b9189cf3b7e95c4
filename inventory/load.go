package inventory

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/yamlnode"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Load reads and validates an inventory file. All problems are returned at
// once, each with file:line:col.
func Load(path string) (*Inventory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	return Parse(path, data)
}

// Parse validates inventory YAML; path is used in problem positions.
func Parse(path string, data []byte) (*Inventory, error) {
	d := &yamlnode.Decoder{File: path}
	inv := &Inventory{File: path, Hosts: map[string]*Host{}, Deployments: map[string]*Deployment{}}
	root := d.Parse(data)
	if root == nil {
		return nil, d.Problems.Err()
	}
	hostNodes := map[string]*yaml.Node{}
	var roleRefs []struct {
		host string
		n    *yaml.Node
	}
	d.Fields(root, "inventory", []string{"hosts", "deployments"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "hosts":
			d.Pairs(v, "hosts", func(name string, k, hv *yaml.Node) {
				if !nameRE.MatchString(name) {
					d.Errorf(k, "host name %q: use letters, digits, '.', '_' and '-'", name)
				}
				hostNodes[name] = k
				inv.Hosts[name] = decodeHost(d, name, hv)
			})
		case "deployments":
			d.Pairs(v, "deployments", func(name string, k, dv *yaml.Node) {
				if !nameRE.MatchString(name) {
					d.Errorf(k, "deployment name %q: use letters, digits, '.', '_' and '-'", name)
				}
				dep := &Deployment{Name: name, Roles: map[string]*Role{}}
				d.Fields(dv, "deployment "+name, []string{"roles", "labels"}, func(key string, _, v *yaml.Node) {
					switch key {
					case "labels":
						dep.Labels = d.StringMap(v, "labels")
					case "roles":
						d.Pairs(v, "roles", func(rname string, rk, rv *yaml.Node) {
							r := decodeRole(d, name, rname, rv)
							if r.Host == "" {
								d.Errorf(rk, "role %s.%s: host is required", name, rname)
							} else {
								roleRefs = append(roleRefs, struct {
									host string
									n    *yaml.Node
								}{r.Host, rv})
							}
							dep.Roles[rname] = r
						})
					}
				})
				if len(dep.Roles) == 0 {
					d.Errorf(k, "deployment %s has no roles", name)
				}
				inv.Deployments[name] = dep
			})
		}
	})
	known := make([]string, 0, len(inv.Hosts))
	for n := range inv.Hosts {
		known = append(known, n)
	}
	slices.Sort(known)
	for _, ref := range roleRefs {
		if _, ok := inv.Hosts[ref.host]; !ok {
			d.Errorf(ref.n, "unknown host %q%s", ref.host, yamlnode.DidYouMean(ref.host, known))
		}
	}
	for name, h := range inv.Hosts {
		seen := map[string]bool{name: true}
		for j := h.Jump; j != ""; {
			jh, ok := inv.Hosts[j]
			if !ok {
				d.Errorf(hostNodes[name], "host %s: jump host %q is not in the inventory%s", name, j, yamlnode.DidYouMean(j, known))
				break
			}
			if seen[j] {
				d.Errorf(hostNodes[name], "host %s: jump hosts form a loop through %q", name, j)
				break
			}
			seen[j] = true
			j = jh.Jump
		}
	}
	d.Problems.Sort()
	if err := d.Problems.Err(); err != nil {
		return nil, err
	}
	return inv, nil
}

var hostKeys = []string{"transport", "address", "port", "user", "identity_files", "identity_file", "passphrase_env", "passphrase_file",
	"agent", "known_hosts", "host_keys", "host_key", "trust_on_first_use", "jump", "connect_timeout", "service_manager", "labels"}

func decodeHost(d *yamlnode.Decoder, name string, n *yaml.Node) *Host {
	h := &Host{Name: name, Transport: "ssh", Port: 22, Services: ServiceManager{Type: "systemd"}, At: map[string]yamlnode.Pos{"": yamlnode.PosOf(n)}}
	what := "host " + name
	d.Fields(n, what, hostKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "transport":
			h.Transport = d.String(v, what+".transport")
			if h.Transport != "ssh" && h.Transport != "local" {
				d.Errorf(v, "%s.transport must be ssh or local, got %q", what, h.Transport)
			}
		case "address":
			h.Address = d.String(v, what+".address")
		case "port":
			h.Port = d.Int(v, what+".port")
			if h.Port < 1 || h.Port > 65535 {
				d.Errorf(v, "%s.port must be 1-65535, got %d", what, h.Port)
			}
		case "user":
			h.User = d.String(v, what+".user")
		case "identity_files", "identity_file":
			for i, f := range d.Strings(v, what+"."+key) {
				h.At[fmt.Sprintf("identity_files.%d", len(h.IdentityFiles))] = itemPos(v, i)
				h.IdentityFiles = append(h.IdentityFiles, resolve(d.File, f))
			}
		case "passphrase_env":
			h.PassphraseEnv = d.String(v, what+".passphrase_env")
		case "passphrase_file":
			h.At["passphrase_file"] = yamlnode.PosOf(v)
			h.PassphraseFile = resolve(d.File, d.String(v, what+".passphrase_file"))
		case "agent":
			h.Agent = d.Bool(v, what+".agent")
		case "known_hosts":
			h.KnownHosts = d.Strings(v, what+".known_hosts")
			for i, f := range h.KnownHosts {
				h.At[fmt.Sprintf("known_hosts.%d", i)] = itemPos(v, i)
				h.KnownHosts[i] = resolve(d.File, f)
			}
		case "host_keys", "host_key":
			h.HostKeys = append(h.HostKeys, d.Strings(v, what+"."+key)...)
		case "trust_on_first_use":
			h.TrustOnFirstUse = d.Bool(v, what+".trust_on_first_use")
		case "jump":
			h.Jump = d.String(v, what+".jump")
		case "connect_timeout":
			h.ConnectTimeout = d.Duration(v, what+".connect_timeout")
		case "labels":
			h.Labels = d.StringMap(v, what+".labels")
		case "service_manager":
			d.Fields(v, what+".service_manager", []string{"type", "restart", "start", "stop", "show"}, func(key string, _, v *yaml.Node) {
				s := d.String(v, what+".service_manager."+key)
				switch key {
				case "type":
					switch {
					case s == "dbus":
						// Accepted once and silently run as systemctl: a
						// config must mean what it says, so it is refused
						// until runbot speaks D-Bus.
						d.Errorf(v, "%s.service_manager.type dbus is not supported: runbot manages units with systemctl (type systemd, the default), locally or over SSH", what)
					case !slices.Contains([]string{"systemd", "command"}, s):
						d.Errorf(v, "%s.service_manager.type must be systemd or command, got %q", what, s)
					}
					h.Services.Type = s
				case "restart":
					h.Services.Restart = s
				case "start":
					h.Services.Start = s
				case "stop":
					h.Services.Stop = s
				case "show":
					h.Services.Show = s
				}
			})
			if h.Services.Type == "command" && (h.Services.Restart == "" || h.Services.Show == "") {
				d.Errorf(v, "%s.service_manager of type command needs restart and show commands", what)
			}
		}
	})
	if h.Transport == "ssh" && h.Address == "" {
		d.Errorf(n, "%s: address is required for ssh transport", what)
	}
	return h
}

// resolve returns a local file the inventory names as it is to be opened
// from the working directory: unchanged when absolute, else joined to the
// inventory's directory, so that the inventory means the same files
// wherever serve or the CLI was started.
func resolve(file, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(file), path)
}

// itemPos is where the i-th string of a value that is a list, or a single
// string, was written.
func itemPos(n *yaml.Node, i int) yamlnode.Pos {
	if n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return yamlnode.PosOf(n.Content[i])
	}
	return yamlnode.PosOf(n)
}

var roleKeys = []string{"host", "unit", "url", "metrics_url", "launch_script", "log_file", "labels"}

func decodeRole(d *yamlnode.Decoder, dep, name string, n *yaml.Node) *Role {
	r := &Role{Name: name}
	what := "role " + dep + "." + name
	d.Fields(n, what, roleKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "host":
			r.Host = d.String(v, what+".host")
		case "unit":
			r.Unit = d.String(v, what+".unit")
		case "url", "metrics_url":
			s := d.String(v, what+"."+key)
			if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.Errorf(v, "%s.%s must be an http(s) URL, got %q", what, key, s)
			}
			if key == "url" {
				r.URL = s
			} else {
				r.MetricsURL = s
			}
		case "launch_script":
			r.LaunchScript = d.String(v, what+".launch_script")
		case "log_file":
			r.LogFile = d.String(v, what+".log_file")
		case "labels":
			r.Labels = d.StringMap(v, what+".labels")
		}
	})
	if r.MetricsURL == "" && r.URL != "" {
		r.MetricsURL = r.URL + "/metrics"
	}
	return r
}
