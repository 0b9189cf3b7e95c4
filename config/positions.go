package config

import (
	"go.yaml.in/yaml/v3"

	"github.com/runbot/runbot/internal/yamlnode"
)

// Positions are where an entry's values were written, by key ("runbook",
// "params.deployment"); "" is the entry itself. Checks that need more than
// the file (the catalog, the inventory) report at them, so every problem
// with a config is file:line:col however late it is found.
type Positions map[string]yamlnode.Pos

// Of returns where key was written, or the entry's position when it was
// not.
func (p Positions) Of(key string) yamlnode.Pos {
	if pos, ok := p[key]; ok {
		return pos
	}
	if pos, ok := p[""]; ok {
		return pos
	}
	return yamlnode.Pos{Line: 1, Col: 1}
}

// record notes a mapping's values under prefix+key, for a map decoded as
// strings (params), whose keys the decoder does not hand back.
func (p Positions) record(prefix string, n *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		p[prefix+n.Content[i].Value] = yamlnode.PosOf(n.Content[i+1])
	}
}
