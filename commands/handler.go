package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
	"github.com/runbot/runbot/runbooks/catalog"
	"github.com/runbot/runbot/runbooks/engine"
	"github.com/runbot/runbot/runbooks/remediation"
	"github.com/runbot/runbot/store"
)

// DefaultCommand is the command's name when Config names none.
const DefaultCommand = "/runbot"

// Config says how the commands are named and who may run what.
type Config struct {
	// Command is the name the chat knows runbot's command by, for help
	// and usage text; DefaultCommand when empty.
	Command string
	// Access says who may run which runbook from the chat. With no
	// rules, nobody may.
	Access []AccessRule
	// Groups are named sets of user IDs, used by access rules (and, in
	// the Remediator, by approvers: "@sre-oncall").
	Groups remediation.Groups
}

// Deps are what the commands read besides the dispatch core.
type Deps struct {
	// TriggerDeps are what every trigger takes: Store answers status
	// and history; the logger. The commands post no message of their
	// own (replies go through the Dispatcher) and run no loop to beat.
	dispatch.TriggerDeps
	// Engine, when set, explains runbooks; the dispatcher's current one
	// (Dispatcher.Current) when nil, which follows a reload.
	Engine *engine.Engine
	// Replier tells a clicker what became of their click; without it,
	// that is only logged.
	Replier chat.Replier
	// UserGroups looks up the chat platform's user groups that access
	// rules name; nil when the platform has none.
	UserGroups chat.UserGroups
}

// Handler is the chat commands as a chat.Handler: the runbot command
// (run, list, explain, status, history, help and the runbooks' own
// trigger words) and the Approve / Deny / Dry-run buttons of a proposed
// remediation. It builds requests and votes for the dispatch core.
type Handler struct {
	cfg  Config
	disp *dispatch.Dispatcher
	// fixedEngine is Deps.Engine; nil follows the dispatcher's.
	fixedEngine *engine.Engine
	store       store.Store
	replier     chat.Replier
	userGroups  chat.UserGroups
	// access is who may run what; SetAccess replaces it on a reload, so
	// each command reads it once.
	access atomic.Pointer[access]
	log    *slog.Logger
}

var _ chat.Handler = (*Handler)(nil)

// New checks the configuration and builds the commands over d.
func New(cfg Config, d *dispatch.Dispatcher, deps Deps) (*Handler, error) {
	if d == nil || deps.Store == nil {
		return nil, errors.New("chat commands: a dispatcher and a store are required")
	}
	if cfg.Command == "" {
		cfg.Command = DefaultCommand
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("chat commands config: %w", err)
	}
	deps.TriggerDeps = d.ForTrigger(deps.TriggerDeps, "commands")
	h := &Handler{
		cfg: cfg, disp: d, fixedEngine: deps.Engine, store: deps.Store, replier: deps.Replier, userGroups: deps.UserGroups,
		log: deps.Logger,
	}
	h.access.Store(&access{rules: cfg.Access, groups: cfg.Groups, chat: deps.UserGroups})
	return h, nil
}

// SetAccess replaces who may run what (cfg.Access and cfg.Groups) for the
// commands that arrive from now on, as a reload of the config does; the
// command's name stays what New was given, since the chat platform knows
// the command by it. A cfg that New would refuse changes nothing.
func (h *Handler) SetAccess(cfg Config) error {
	cfg.Command = h.cfg.Command
	if err := cfg.validate(); err != nil {
		return fmt.Errorf("chat commands config: %w", err)
	}
	h.access.Store(&access{rules: cfg.Access, groups: cfg.Groups, chat: h.userGroups})
	return nil
}

// catalog is the runbooks the dispatcher has now.
func (h *Handler) catalog() *catalog.Catalog { return h.disp.Catalog() }

// engine explains and prepares runbooks: Deps.Engine, or the
// dispatcher's current one.
func (h *Handler) engine() *engine.Engine {
	if h.fixedEngine != nil {
		return h.fixedEngine
	}
	return h.disp.Current().Engine
}

func (c Config) validate() error {
	var errs []error
	if !strings.HasPrefix(c.Command, "/") {
		errs = append(errs, fmt.Errorf("command %q must start with /", c.Command))
	}
	for i, r := range c.Access {
		if len(r.Runbooks) == 0 {
			errs = append(errs, fmt.Errorf("access rule %d: runbooks is required (names or \"*\")", i+1))
		}
		if len(r.Users)+len(r.Groups)+len(r.UserGroups) == 0 {
			errs = append(errs, fmt.Errorf("access rule %d: name users, groups or user groups", i+1))
		}
		for _, g := range r.Groups {
			if _, ok := c.Groups[g]; !ok {
				errs = append(errs, fmt.Errorf("access rule %d: unknown group %q", i+1, g))
			}
		}
	}
	return errors.Join(errs...)
}

// builtinCommands are the words the command knows besides runbooks'
// trigger words.
var builtinCommands = []string{"run", "list", "status", "history", "explain", "rearm", "help"}

// Command implements chat.Handler. The answer is the immediate reply only
// its author sees; a run it starts reports in the channel on its own.
func (h *Handler) Command(ctx context.Context, c chat.Command) chat.Message {
	h.log.Info("command", "user", c.User, "channel", c.Channel)
	words, err := tokenize(c.Text)
	if err != nil {
		return errorReply(fmt.Sprintf("Could not read the command: %v.", err), h.usage())
	}
	if len(words) == 0 || words[0] == "help" {
		return h.help()
	}
	switch words[0] {
	case "list":
		return h.list()
	case "history":
		return h.history(ctx)
	case "status":
		return h.status(ctx, words[1:])
	case "explain":
		return h.explain(ctx, words[1:])
	case "rearm":
		return h.rearm(ctx, c, words[1:])
	case "run":
		if len(words) < 2 {
			return errorReply("Which runbook? "+chat.Code(h.cfg.Command+" run RUNBOOK [key=value …]")+".", h.runbookList())
		}
		rb, err := h.disp.Runbook(words[1])
		if err != nil {
			return errorReply(err.Error()+".", chat.Code(h.cfg.Command+" list")+" shows them all.")
		}
		return h.run(ctx, c, rb, words[2:])
	}
	if rb := h.catalog().ByCommand(words[0]); rb != nil {
		return h.run(ctx, c, rb, words[1:])
	}
	if slices.Contains(h.catalog().Names(), words[0]) {
		return errorReply(fmt.Sprintf("%q is a runbook; run it with %s.", words[0], chat.Code(h.cfg.Command+" run "+words[0]+" …")))
	}
	hint := yamlnode.DidYouMean(words[0], h.commandWords())
	return errorReply(fmt.Sprintf("Unknown command %q%s.", words[0], hint), chat.Code(h.cfg.Command+" help")+" lists the commands.")
}

// commandWords are every word the slash command accepts first.
func (h *Handler) commandWords() []string {
	words := slices.Clone(builtinCommands)
	for _, rb := range h.catalog().All() {
		if rb.Triggers.Command != "" {
			words = append(words, rb.Triggers.Command)
		}
	}
	return words
}

func errorReply(text string, more ...string) chat.Message {
	m := chat.Message{Title: "runbot", Status: chat.StatusError, Sections: []chat.Section{{Text: text}}}
	for _, t := range more {
		if t != "" {
			m.Sections = append(m.Sections, chat.Section{Text: t})
		}
	}
	return m
}

// bindArgs maps the words after a runbook to its params: key=value words
// by name, other words to the runbook's positional args not given by name,
// in order.
func bindArgs(rb *runbooks.Runbook, words []string) (map[string]string, error) {
	params := map[string]string{}
	var names []string
	for _, p := range rb.Params {
		names = append(names, p.Name)
	}
	nextArg := func() string {
		for _, a := range rb.Triggers.Args {
			if _, given := params[a]; !given {
				return a
			}
		}
		return ""
	}
	for _, w := range words {
		k, v, isKV := strings.Cut(w, "=")
		// "k=v" names a param when k is one, looks like a typo of one, or
		// no positional arg is left; otherwise it is a positional value
		// that happens to hold "=".
		if isKV && k != "" && (rb.Param(k) != nil || yamlnode.Suggest(k, names) != "" || nextArg() == "") {
			if _, dup := params[k]; dup {
				return nil, fmt.Errorf("%s is given twice", k)
			}
			params[k] = v
			continue
		}
		name := nextArg()
		if name == "" {
			return nil, fmt.Errorf("unexpected argument %q", w)
		}
		params[name] = w
	}
	return params, nil
}

// usageOf shows how to run a runbook from the chat.
func (h *Handler) usageOf(rb *runbooks.Runbook) string {
	var parts []string
	if rb.Triggers.Command != "" {
		parts = append(parts, chat.Code(strings.TrimSpace(h.cfg.Command+" "+rb.Triggers.Command+" "+argNames(rb))))
	}
	var kv []string
	for _, p := range rb.Params {
		if p.Required {
			kv = append(kv, p.Name+"=…")
		}
	}
	parts = append(parts, chat.Code(strings.TrimSpace(h.cfg.Command+" run "+rb.Name+" "+strings.Join(kv, " "))+" [key=value …]"))
	return strings.Join(parts, " or ")
}

func argNames(rb *runbooks.Runbook) string {
	var out []string
	for _, a := range rb.Triggers.Args {
		out = append(out, strings.ToUpper(a))
	}
	return strings.Join(out, " ")
}

func (h *Handler) usage() string {
	return chat.Code(h.cfg.Command+" help") + " shows how to use it."
}
