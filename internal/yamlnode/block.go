package yamlnode

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// BlockPos returns where byte offset off of a literal (|) or folded (>)
// block scalar's value was written in src, the document n was parsed from:
// an expression error inside `when: >-` then points at the token, not at
// the `>-`. It handles the blocks runbooks are written with: each source
// line of the block is one line of the value, joined by one character (a
// newline, or the space folding makes of it). A block with blank or
// more-indented lines, where folding is not one-for-one, gives false, and
// the caller falls back to the node's own position.
func BlockPos(src []byte, n *yaml.Node, off int) (Pos, bool) {
	if n == nil || (n.Style != yaml.LiteralStyle && n.Style != yaml.FoldedStyle) || off < 0 {
		return Pos{}, false
	}
	lines := strings.Split(string(src), "\n")
	first := n.Line // 1-based line of the indicator; content starts below it
	if first >= len(lines) {
		return Pos{}, false
	}
	indent := -1
	for i := first; i < len(lines); i++ {
		line := lines[i]
		content := strings.TrimLeft(line, " ")
		if indent < 0 {
			if content == "" {
				return Pos{}, false
			}
			indent = len(line) - len(content)
		}
		if content == "" || len(line)-len(content) < indent {
			break // the block ended before off
		}
		if len(line)-len(content) != indent {
			return Pos{}, false
		}
		if off <= len(content) {
			return Pos{Line: i + 1, Col: indent + off + 1}, true
		}
		off -= len(content) + 1
	}
	return Pos{}, false
}
