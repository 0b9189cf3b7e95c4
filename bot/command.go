package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/slack-go/slack"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/runbooks"
)

// builtinCommands are the words the slash command knows besides runbooks'
// trigger words.
var builtinCommands = []string{"run", "list", "status", "history", "explain", "help"}

// command answers a slash command. The answer is the immediate,
// ephemeral reply; a run it starts reports in the channel on its own. It
// must return within Slack's 3 seconds.
func (b *Bot) command(ctx context.Context, sc slack.SlashCommand) Message {
	ctx, cancel := context.WithTimeout(ctx, quickTimeout)
	defer cancel()
	words, err := tokenize(sc.Text)
	if err != nil {
		return errorReply(fmt.Sprintf("Could not read the command: %v.", err), b.usage())
	}
	if len(words) == 0 || words[0] == "help" {
		return b.help()
	}
	switch words[0] {
	case "list":
		return b.list()
	case "history":
		return b.history(ctx)
	case "status":
		return b.status(ctx, words[1:])
	case "explain":
		return b.explain(ctx, words[1:])
	case "run":
		if len(words) < 2 {
			return errorReply("Which runbook? `"+b.cfg.Command+" run RUNBOOK [key=value …]`.", b.runbookList())
		}
		rb, err := b.disp.Runbook(words[1])
		if err != nil {
			return errorReply(err.Error()+".", "`"+b.cfg.Command+" list` shows them all.")
		}
		return b.run(ctx, sc, rb, words[2:])
	}
	if rb := b.catalog.ByCommand(words[0]); rb != nil {
		return b.run(ctx, sc, rb, words[1:])
	}
	if slices.Contains(b.catalog.Names(), words[0]) {
		return errorReply(fmt.Sprintf("%q is a runbook; run it with `%s run %s …`.", words[0], b.cfg.Command, words[0]))
	}
	hint := yamlnode.DidYouMean(words[0], b.commandWords())
	return errorReply(fmt.Sprintf("Unknown command %q%s.", words[0], hint), "`"+b.cfg.Command+" help` lists the commands.")
}

// commandWords are every word the slash command accepts first.
func (b *Bot) commandWords() []string {
	words := slices.Clone(builtinCommands)
	for _, rb := range b.catalog.All() {
		if rb.Triggers.Command != "" {
			words = append(words, rb.Triggers.Command)
		}
	}
	return words
}

func errorReply(text string, more ...string) Message {
	m := Message{Title: "runbot", Status: StatusError, Sections: []Section{{Text: text}}}
	for _, t := range more {
		if t != "" {
			m.Sections = append(m.Sections, Section{Text: t})
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

// usageOf shows how to run a runbook from Slack.
func (b *Bot) usageOf(rb *runbooks.Runbook) string {
	var parts []string
	if rb.Triggers.Command != "" {
		parts = append(parts, strings.TrimSpace("`"+b.cfg.Command+" "+rb.Triggers.Command+" "+argNames(rb)+"`"))
	}
	var kv []string
	for _, p := range rb.Params {
		if p.Required {
			kv = append(kv, p.Name+"=…")
		}
	}
	parts = append(parts, "`"+strings.TrimSpace(b.cfg.Command+" run "+rb.Name+" "+strings.Join(kv, " "))+" [key=value …]`")
	return strings.Join(parts, " or ")
}

func argNames(rb *runbooks.Runbook) string {
	var out []string
	for _, a := range rb.Triggers.Args {
		out = append(out, strings.ToUpper(a))
	}
	return strings.Join(out, " ")
}

func (b *Bot) usage() string {
	return "`" + b.cfg.Command + " help` shows how to use it."
}
