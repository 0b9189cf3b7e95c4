package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// flagSpec describes one flag a tolerant parser understands. Python's argparse, which
// SGLang uses, accepts both "--flag value" and "--flag=value"; the simulator must
// accept both, too, so that a real serve script runs unchanged.
type flagSpec struct {
	// boolean flags take no value (argparse store_true).
	boolean bool
	// optional, when set, is asked whether the token after the first value is a
	// second value of the same flag (the router's "--prefill URL [BOOTSTRAP_PORT]").
	optional func(next string) bool
	set      func(vals []string) error
}

// ExtraFlag is a flag the simulator does not model. It is kept so that the startup
// server_args dump still shows it, as the real engine would.
type ExtraFlag struct {
	Name  string
	Value string // empty for a boolean flag
	Bool  bool
}

// parseTolerant parses args against specs. Unknown flags are collected, not
// rejected: an unknown flag takes the next token as its value unless that token is
// itself a flag, which is how an unknown store_true flag is told apart.
func parseTolerant(args []string, specs map[string]flagSpec) ([]ExtraFlag, []string, error) {
	var extra []ExtraFlag
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "--") || arg == "--" {
			positional = append(positional, arg)
			continue
		}
		name, inline, hasInline := strings.Cut(arg[2:], "=")
		key := strings.ReplaceAll(name, "_", "-")
		spec, known := specs[key]
		if !known {
			ef := ExtraFlag{Name: key}
			switch {
			case hasInline:
				ef.Value = inline
			case i+1 < len(args) && !strings.HasPrefix(args[i+1], "--"):
				i++
				ef.Value = args[i]
			default:
				ef.Bool = true
			}
			extra = append(extra, ef)
			continue
		}
		if spec.boolean {
			val := "true"
			if hasInline {
				val = inline
			}
			if err := spec.set([]string{val}); err != nil {
				return nil, nil, fmt.Errorf("flag --%s: %w", key, err)
			}
			continue
		}
		var vals []string
		if hasInline {
			vals = append(vals, inline)
		} else {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag --%s needs a value", key)
			}
			i++
			vals = append(vals, args[i])
		}
		if spec.optional != nil && i+1 < len(args) && spec.optional(args[i+1]) {
			i++
			vals = append(vals, args[i])
		}
		if err := spec.set(vals); err != nil {
			return nil, nil, fmt.Errorf("flag --%s: %w", key, err)
		}
	}
	return extra, positional, nil
}

func setString(p *string) flagSpec {
	return flagSpec{set: func(v []string) error { *p = v[0]; return nil }}
}

func setStrings(p *[]string) flagSpec {
	return flagSpec{set: func(v []string) error { *p = append(*p, v[0]); return nil }}
}

func setInt(p *int) flagSpec {
	return flagSpec{set: func(v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil {
			return fmt.Errorf("not an integer: %q", v[0])
		}
		*p = n
		return nil
	}}
}

func setFloat(p *float64) flagSpec {
	return flagSpec{set: func(v []string) error {
		f, err := strconv.ParseFloat(v[0], 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v[0])
		}
		*p = f
		return nil
	}}
}

func setDuration(p *time.Duration) flagSpec {
	return flagSpec{set: func(v []string) error {
		d, err := time.ParseDuration(v[0])
		if err != nil {
			return fmt.Errorf("not a duration: %q", v[0])
		}
		*p = d
		return nil
	}}
}

func setBool(p *bool) flagSpec {
	return flagSpec{boolean: true, set: func(v []string) error {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			return fmt.Errorf("not a boolean: %q", v[0])
		}
		*p = b
		return nil
	}}
}

// mergeConfigFile does what SGLang's ConfigArgumentMerger does with
// "--config FILE.yaml" (server_args_config_parser.py): the file's top-level
// "key: value" pairs become "--key value" arguments placed before the command
// line's own, so that the command line wins. A boolean (SGLang's are store_true
// flags) set to true becomes a bare "--key"; false leaves it out. It returns the
// merged arguments and the file's path.
func mergeConfigFile(args []string) ([]string, string, error) {
	at := -1
	for i, a := range args {
		if a == "--config" {
			if at >= 0 {
				return nil, "", fmt.Errorf("multiple config files specified! Only one allowed")
			}
			at = i
		}
	}
	if at < 0 {
		return args, "", nil
	}
	if at == len(args)-1 {
		return nil, "", fmt.Errorf("no config file specified after --config flag")
	}
	path := args[at+1]
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".yaml" && ext != ".yml" {
		return nil, "", fmt.Errorf("config file must be YAML format, got: %s", ext)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("config file not found: %w", err)
	}
	pairs, err := parseFlatYAML(string(b))
	if err != nil {
		return nil, "", fmt.Errorf("config file %s: %w", path, err)
	}
	var merged []string
	for _, p := range pairs {
		key := strings.TrimPrefix(p.key, "--")
		switch {
		case p.list != nil:
			if len(p.list) > 0 {
				merged = append(merged, "--"+key)
				merged = append(merged, p.list...)
			}
		case p.isBool:
			// SGLang's boolean server arguments are store_true flags: true passes
			// the bare flag, false leaves it out.
			if p.boolValue {
				merged = append(merged, "--"+key)
			}
		default:
			merged = append(merged, "--"+key, p.value)
		}
	}
	rest := append(append([]string(nil), args[:at]...), args[at+2:]...)
	return append(merged, rest...), path, nil
}

// yamlPair is one top-level entry of a flat YAML mapping.
type yamlPair struct {
	key       string
	value     string
	isBool    bool
	boolValue bool
	list      []string
}

// parseFlatYAML reads the subset of YAML that SGLang config files use: a top-level
// mapping of scalars, booleans and lists (flow "[a, b]" or block "- a"). Nested
// mappings are refused rather than misread.
func parseFlatYAML(text string) ([]yamlPair, error) {
	var pairs []yamlPair
	for n, raw := range strings.Split(text, "\n") {
		line := stripYAMLComment(raw)
		if strings.TrimSpace(line) == "" || strings.TrimSpace(line) == "---" {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "- ") || trimmed == "-" {
			if len(pairs) == 0 || pairs[len(pairs)-1].value != "" || pairs[len(pairs)-1].isBool {
				return nil, fmt.Errorf("line %d: list item outside a list", n+1)
			}
			last := &pairs[len(pairs)-1]
			last.list = append(last.list, yamlScalar(strings.TrimSpace(strings.TrimPrefix(trimmed, "-"))))
			continue
		}
		if line != trimmed && line[0] == ' ' {
			return nil, fmt.Errorf("line %d: nested mappings are not supported", n+1)
		}
		key, val, ok := strings.Cut(trimmed, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want key: value", n+1)
		}
		p := yamlPair{key: strings.TrimSpace(key)}
		val = strings.TrimSpace(val)
		switch {
		case val == "":
			p.list = []string{} // a block list (or an empty value) follows
		case strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]"):
			p.list = []string{}
			for _, item := range strings.Split(strings.Trim(val, "[]"), ",") {
				if item = strings.TrimSpace(item); item != "" {
					p.list = append(p.list, yamlScalar(item))
				}
			}
		case strings.HasPrefix(val, "{"):
			return nil, fmt.Errorf("line %d: nested mappings are not supported", n+1)
		default:
			switch strings.ToLower(val) {
			case "true", "yes", "on":
				p.isBool, p.boolValue = true, true
			case "false", "no", "off":
				p.isBool = true
			default:
				p.value = yamlScalar(val)
			}
		}
		pairs = append(pairs, p)
	}
	return pairs, nil
}

// stripYAMLComment drops a "# comment" that is not inside quotes.
func stripYAMLComment(line string) string {
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// yamlScalar unquotes a quoted YAML scalar.
func yamlScalar(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}
