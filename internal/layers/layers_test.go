package layers_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const mod = "github.com/runbot/runbot/"

// allowed lists, per package (prefix), the project packages it may import
// directly. An entry names one package, not its sub-packages (runbooks is
// the language, not the engine below it); an entry ending in a slash
// allows the whole subtree (internal/). Third-party and standard library
// imports are not restricted here; depguard in .golangci.yml guards those.
var allowed = map[string][]string{
	"cmd/runbot":     {"*"},
	"cmd/sglang-sim": {"sim"},
	// The daemon wires every part from a checked config and runs it; only
	// the command line sits above it. It reaches hosts through the SSH
	// pool, never through a check or an action of its own.
	"daemon": {"preflight", "alerts", "commands", "schedule", "slackchat", "web", "dispatch", "chat", "chat/outbox", "runbooks", "runbooks/engine", "runbooks/bind", "runbooks/remediation", "timeline", "store", "remote/sshrun", "config", "inventory", "internal/"},
	// The demo runs the incident on the simulator with the engine, the
	// remediator and the chat message the core builds.
	"demo": {"runview", "chat", "slackchat", "runbooks", "runbooks/catalog", "runbooks/engine", "runbooks/bind", "runbooks/remediation", "runbooks/record", "store", "inventory", "remote/sshrun", "internal/"},
	// The preflight reads the config and what it names and checks every
	// reference between them; it opens and starts nothing.
	"preflight": {"config", "runbooks", "runbooks/tmpl", "runbooks/catalog", "runbooks/bind", "inventory", "internal/"},
	// slackchat is the Slack platform: it implements the chat seam and
	// hands what Slack sends to a chat.Handler; it knows no trigger, no
	// core, no runbook and no store.
	"slackchat": {"chat", "internal/"},
	// dispatch is the core every trigger goes through: it runs and
	// records through runbooks and posts through chat, and knows no
	// platform and no trigger.
	"dispatch": {"runview", "runbooks", "runbooks/catalog", "runbooks/engine", "runbooks/remediation", "runbooks/record", "store", "chat", "internal/"},
	// runview renders a run as its chat message, for the core, the
	// triggers' own messages and the demo; like the core it knows the
	// chat seam and no platform.
	"runview": {"chat", "runbooks", "runbooks/failures", "runbooks/engine", "runbooks/record", "runbooks/remediation", "store", "internal/"},
	// Triggers build requests and call the dispatch core; chat platforms
	// sit beside them.
	"schedule": {"dispatch", "runview", "chat", "runbooks", "runbooks/catalog", "runbooks/bind", "runbooks/record", "store", "internal/"},
	"alerts":   {"dispatch", "runview", "chat", "runbooks", "runbooks/tmpl", "runbooks/catalog", "store", "internal/"},
	"commands": {"dispatch", "runview", "chat", "runbooks", "runbooks/catalog", "runbooks/engine", "runbooks/remediation", "store", "internal/"},
	// chat is the seam between runbot and a chat platform: the message
	// model, its own message reference and the interface; it knows
	// nothing else of runbot. chattest records for tests.
	"chat":          {},
	"chat/chattest": {"chat"},
	// The outbox keeps chat messages in the store until the platform
	// takes them.
	"chat/outbox": {"chat", "store"},
	// The runbook language: model, loading, validation, expressions,
	// params, claims, verdicts and reports. It knows the check and action
	// specs, and no store, host or inventory.
	"runbooks": {"runbooks/tmpl", "runbooks/escape", "checks", "actions", "internal/"},
	// The engine runs a prepared runbook's steps over the targets it is
	// given; it knows runners, not where they come from (it knows the SSH
	// runner only to share one shell per host across a run's steps).
	"runbooks/engine": {"runbooks", "runbooks/tmpl", "checks", "actions", "remote", "remote/sshrun", "internal/"},
	// Target binding: roles of the inventory's deployments resolved to
	// hosts and their runners, and the fleet a fleet run picks from.
	"runbooks/bind": {"runbooks", "runbooks/engine", "inventory", "remote", "remote/sshrun", "internal/"},
	// Remediation: plans, votes, apply with its guardrails, verification
	// and rollback; the one part of the runbooks that writes plans.
	"runbooks/remediation": {"runbooks", "runbooks/catalog", "runbooks/engine", "actions", "store", "internal/"},
	// The run recorder: every trigger's one path from a request to a
	// stored run and its proposal.
	"runbooks/record": {"runbooks", "runbooks/engine", "runbooks/remediation", "store", "internal/"},
	// The summary of what did not run in a report (unreachable hosts,
	// failures folded by host and cause) reads the report and nothing else.
	"runbooks/failures": {"runbooks", "internal/"},
	// The catalog loads every runbook runbot knows: the built-ins
	// embedded from runbooks/builtin, which holds them and imports
	// nothing of runbot, and the configured directories.
	"runbooks/catalog": {"runbooks", "runbooks/builtin", "internal/"},
	"runbooks/builtin": {},
	// The templates: text/template with runbot's functions, each value
	// escaped for where it lands; they know escaping, nothing of runbooks.
	"runbooks/tmpl": {"runbooks/escape", "internal/"},
	// Template escaping knows templates and the argument kinds, nothing
	// of runbooks.
	"runbooks/escape": {"internal/argspec"},
	// Record and replay, and the runbook tests (runbot test) on them:
	// they drive the engine with taped observations, so they sit above
	// it, and nothing in runbooks knows them.
	"runbooks/replay": {"runbooks", "runbooks/catalog", "runbooks/engine", "checks", "remote", "remote/sshrun", "internal/"},
	// A fleet run: one runbook over many deployments, each run recorded.
	"runbooks/fleet": {"runbooks", "runbooks/engine", "runbooks/bind", "runbooks/record", "store", "internal/"},
	// The generator of the JSON Schema and the reference docs reads the
	// language and the check and action specs.
	"runbooks/refdoc": {"runbooks", "checks", "actions", "internal/"},
	"checks":          {"remote", "internal/"},
	"actions":         {"remote", "internal/"},
	"remote":          {"internal/shell"},
	// The SSH transport implements remote's runner and service manager
	// over one kept connection per host; remote knows nothing of it.
	"remote/sshrun": {"remote", "internal/shell"},
	"inventory":     {"internal/yamlnode"},
	"store":         {"internal/"},
	"config":        {"internal/"},
	// approvals casts votes away from chat (runbot approve and deny as
	// the config's operators: map the OS user, and the prompt of runbot
	// run --remediate) through the remediator, and prints with console.
	"approvals": {"config", "console", "runbooks", "runbooks/engine", "runbooks/remediation", "store", "internal/"},
	// console renders for a terminal what the CLI shows; it decides
	// nothing and opens nothing: it reads the values it is given.
	"console":  {"runbooks", "runbooks/failures", "runbooks/engine", "runbooks/remediation", "runbooks/record", "runbooks/replay", "runbooks/fleet", "store", "internal/"},
	"timeline": {"runbooks", "runbooks/remediation", "incident", "internal/"},
	"sim":      {},
	"bench":    {"*"},
	"test":     {"*"},
	// incident reads one run and what is recorded about it from the
	// store and writes the postmortem draft; web serves the report pages
	// from it. Neither knows a chat platform, a trigger or the core.
	"incident": {"runbooks", "runbooks/record", "runbooks/remediation", "store", "internal/"},
	"web":      {"incident", "runbooks", "runbooks/failures", "runbooks/record", "runbooks/remediation", "store", "timeline", "internal/"},
	// internal/target names a remote.Runner: the one way down into remote.
	"internal/target": {"remote", "internal/"},
	"internal/":       {"internal/"},
	// The conformance suite holds backends to the Store contract: it
	// knows the interface, and the throwaway PostgreSQL cluster it runs
	// the PostgreSQL backend on, and nothing else of runbot.
	"store/storetest": {"store", "store/internal/pgtest"},
	// The throwaway PostgreSQL cluster the store's tests run on knows
	// nothing of runbot.
	"store/internal/pgtest": {},
}

func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").CombinedOutput()
	require.NoError(t, err, string(out))
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		rule, ok := ruleFor(pkg)
		require.True(t, ok, "package %s has no layering rule; add it to the table in this test", pkg)
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			dep := strings.TrimPrefix(imp, mod)
			require.True(t, permitted(rule, dep), "%s must not import %s (allowed: %v)", pkg, dep, rule)
			checked++
		}
	}
	require.Positive(t, checked)
}

func ruleFor(pkg string) ([]string, bool) {
	best, bestLen := []string(nil), -1
	for prefix, rule := range allowed {
		if (pkg == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(pkg, prefix) || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) > bestLen {
			best, bestLen = rule, len(prefix)
		}
	}
	return best, bestLen >= 0
}

func permitted(rule []string, dep string) bool {
	for _, r := range rule {
		if r == "*" || dep == strings.TrimSuffix(r, "/") || (strings.HasSuffix(r, "/") && strings.HasPrefix(dep, r)) {
			return true
		}
	}
	return false
}

// TestRulesCatchViolations guards the checker itself.
func TestRulesCatchViolations(t *testing.T) {
	cases := []struct {
		pkg, dep string
		ok       bool
	}{
		{"checks", "actions", false},
		{"actions", "checks", false},
		{"runbooks", "slackchat", false},
		{"remote", "runbooks", false},
		{"remote", "remote/sshrun", false},
		{"runbooks", "store", false},
		{"runbooks", "remote", false},
		{"runbooks", "inventory", false},
		{"runbooks", "runbooks/engine", false},
		{"runbooks/engine", "runbooks/remediation", false},
		{"runbooks/engine", "store", false},
		{"runbooks/remediation", "runbooks/record", false},
		{"remote/sshrun", "remote", true},
		{"daemon", "cmd/runbot", false},
		{"preflight", "store", false},
		{"preflight", "daemon", false},
		{"checks", "remote", true},
		{"runbooks", "internal/step", true},
		{"runbooks", "runbooks/escape", true},
		{"runbooks/escape", "runbooks", false},
		{"runbooks", "runbooks/tmpl", true},
		{"runbooks/tmpl", "runbooks", false},
		{"runbooks/tmpl", "runbooks/escape", true},
		{"runbooks/replay", "runbooks", true},
		{"runbooks", "runbooks/replay", false},
		{"runbooks/refdoc", "runbooks", true},
		{"runbooks", "runbooks/refdoc", false},
		{"runbooks/failures", "runbooks", true},
		{"runbooks", "runbooks/failures", false},
		{"runbooks/catalog", "runbooks", true},
		{"runbooks", "runbooks/catalog", false},
		{"runbooks/builtin", "runbooks", false},
		{"runbooks/catalog", "store", false},
		{"runbooks/failures", "store", false},
		{"internal/step", "remote", false},
		{"internal/target", "remote", true},
		{"sim", "runbooks", false},
		{"store/storetest", "store", true},
		{"chat", "store", false},
		{"slackchat", "store", false},
		{"slackchat", "runbooks", false},
		{"chat/chattest", "store", false},
		{"chat", "runbooks", false},
		{"chat", "slackchat", false},
		{"chat/chattest", "chat", true},
		{"chat/chattest", "slackchat", false},
		{"runbooks", "chat", false},
		{"dispatch", "slackchat", false},
		{"runview", "slackchat", false},
		{"runview", "dispatch", false},
		{"dispatch", "chat", true},
		{"runbooks", "dispatch", false},
		{"chat", "dispatch", false},
		{"slackchat", "dispatch", false},
		{"slackchat", "commands", false},
		{"slackchat", "chat", true},
		{"commands", "dispatch", true},
		{"commands", "slackchat", false},
		{"dispatch", "commands", false},
		{"schedule", "dispatch", true},
		{"schedule", "slackchat", false},
		{"alerts", "dispatch", true},
		{"alerts", "chat", true},
		{"alerts", "slackchat", false},
		{"alerts", "schedule", false},
		{"dispatch", "alerts", false},
		{"dispatch", "schedule", false},
		{"store/storetest", "runbooks", false},
		{"store", "store/storetest", false},
		{"checks", "internal/shellscript", true},
		{"actions", "internal/shellscript", true},
		{"internal/shellscript", "remote", false},
		{"internal/shellscript", "checks", false},
		{"web", "incident", true},
		{"web", "timeline", true},
		{"web", "slackchat", false},
		{"web", "dispatch", false},
		{"incident", "web", false},
		{"incident", "timeline", false},
		{"dispatch", "web", false},
		{"slackchat", "web", false},
	}
	for _, c := range cases {
		rule, ok := ruleFor(c.pkg)
		require.True(t, ok)
		require.Equal(t, c.ok, permitted(rule, c.dep), "%s -> %s", c.pkg, c.dep)
	}
}
