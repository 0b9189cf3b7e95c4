package dispatch

import (
	"log/slog"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/internal/heartbeat"
	"github.com/runbot/runbot/store"
)

// TriggerDeps are what a trigger package works with besides the
// Dispatcher it submits to. They are the same for every trigger, so that
// each one is wired alike: a trigger's constructor is
// New(cfg Config, d *Dispatcher, deps Deps), and its Deps embeds
// TriggerDeps beside what only that trigger needs (alerts.Deps,
// commands.Deps, schedule.Deps).
type TriggerDeps struct {
	// Store keeps what the trigger records besides its requests (an
	// alert's deliveries, a schedule's previous runs).
	Store store.Store
	// Chat, when set, gets the trigger's own messages (an alert's, an
	// audit summary); without it they are logged. Runs post through the
	// Dispatcher's chat.
	Chat chat.Chat
	// Heartbeat, when set, gets the trigger's loop registered, and the
	// loop beats while it makes progress.
	Heartbeat *heartbeat.Monitor
	// Logger is slog.Default() when nil; Now is the Dispatcher's clock
	// when nil.
	Logger *slog.Logger
	Now    func() time.Time
}

// ForTrigger fills in what deps leave out: the logger, labelled with the
// trigger's component name, and d's clock.
func (d *Dispatcher) ForTrigger(deps TriggerDeps, component string) TriggerDeps {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	deps.Logger = deps.Logger.With("component", component)
	if deps.Now == nil {
		deps.Now = d.now
	}
	return deps
}
