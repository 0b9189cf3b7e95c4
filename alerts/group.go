package alerts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/dispatch"
)

// Messages say how alert messages are laid out in the channel.
type Messages string

const (
	// MessagesGroup, the default, posts one message per Alertmanager
	// notification group that has more than one alert: a live summary of
	// its alerts, their runbooks and verdicts, with the runs in its thread
	// only when someone must act on one. A group of one alert gets the
	// alert's own message.
	MessagesGroup Messages = "group"
	// MessagesAlert posts one message per alert, with its run in its
	// thread, whatever the group.
	MessagesAlert Messages = "alert"
)

// maxGroupLines bounds the alerts a group's summary lists one by one.
const maxGroupLines = 40

// alertGroup is one notification group's summary message and its alerts.
type alertGroup struct {
	key     string
	channel string
	// common are the labels every alert of the notification that opened
	// the group has (Alertmanager's commonLabels).
	common map[string]string

	// post serializes posting the summary: the first member posts it,
	// the others wait for its reference.
	post sync.Mutex
	ref  chat.Ref
	err  error

	// live and members are read and written under Receiver.mu.
	live    *dispatch.Live
	members []*alertTrack
}

// oncePoster is a chat that posts one message per key (the outbox): a
// group's summary is posted once even when several processes see the
// group.
type oncePoster interface {
	PostOnce(ctx context.Context, key, channel, thread string, m chat.Message) (chat.Ref, bool, error)
}

// groupFor returns the group an alert's message belongs to, creating it,
// or nil when the alert gets a message of its own: per-alert messages are
// configured, the chat is off, or it is alone in its notification and its
// group has no summary yet.
func (a *Receiver) groupFor(ev alertEvent) *alertGroup {
	if a.cfg.Messages == MessagesAlert || a.chat == nil || ev.alert.GroupKey == "" {
		return nil
	}
	channel := a.channel()
	key := channel + " " + ev.alert.GroupKey
	a.mu.Lock()
	defer a.mu.Unlock()
	if g := a.groups[key]; g != nil {
		return g
	}
	if ev.groupSize < 2 {
		return nil
	}
	g := &alertGroup{key: ev.alert.GroupKey, channel: channel, common: ev.common}
	a.groups[key] = g
	return g
}

// join adds t to the group and returns the group's message reference for
// its run's thread, posting the summary first if no one has yet.
func (a *Receiver) join(ctx context.Context, g *alertGroup, t *alertTrack) (chat.Ref, error) {
	a.mu.Lock()
	t.group = g
	g.members = append(g.members, t)
	a.mu.Unlock()

	g.post.Lock()
	defer g.post.Unlock()
	if g.ref.ID != "" || g.err != nil {
		a.showGroup(g)
		return g.ref, g.err
	}
	ctx, cancel := context.WithTimeout(ctx, chatTimeout)
	defer cancel()
	view := a.groupView(g)
	var err error
	if op, ok := a.chat.(oncePoster); ok {
		// One summary per group and dedup window, whichever replica
		// posts it; a group that fires again a day later gets a new one
		// at the bottom of the channel, not an update far above.
		window := a.now().Truncate(a.cfg.DedupWindow).Unix()
		g.ref, _, err = op.PostOnce(ctx, fmt.Sprintf("alert-group %s %d %s", g.channel, window, g.key), g.channel, "", view)
	} else {
		g.ref, err = a.chat.Post(ctx, g.channel, "", view)
	}
	if err != nil {
		g.err = err
		a.log.Warn("alert group summary not posted; its runs post on their own", "group", g.key, "err", err)
		return chat.Ref{}, err
	}
	live := a.liveMessage(g.ref)
	a.mu.Lock()
	g.live = live
	a.mu.Unlock()
	// Members that joined while the summary was posted are in it by
	// the next update.
	a.showGroup(g)
	return g.ref, nil
}

// showGroup brings the group's summary up to date; updates coalesce.
func (a *Receiver) showGroup(g *alertGroup) {
	a.mu.Lock()
	live := g.live
	a.mu.Unlock()
	if live != nil {
		live.Set(a.groupView(g))
	}
}

// groupView renders a group's summary: what fires in common, how many
// alerts, and each alert's runbook and verdict as they settle.
func (a *Receiver) groupView(g *alertGroup) chat.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := g.common["alertname"]
	if name == "" {
		name = "Alert group"
	}
	var settled, waiting, notRun, resolved int
	worst := chat.StatusNone
	lines := make([]chat.Line, 0, min(len(g.members), maxGroupLines))
	for i, t := range g.members {
		st, text := t.groupLine(g.common)
		switch {
		case t.problem != "":
			notRun++
		case t.verdict != "":
			settled++
		default:
			waiting++
		}
		if t.resolved {
			resolved++
		}
		worst = worse(worst, st)
		if i < maxGroupLines {
			lines = append(lines, chat.Line{Status: st, Text: text})
		}
	}
	if n := len(g.members) - maxGroupLines; n > 0 {
		lines = append(lines, chat.Line{Text: fmt.Sprintf("… and %d more alerts: runbot history --runbook NAME lists their runs", n)})
	}
	m := chat.Message{Title: fmt.Sprintf("%s: %d alerts firing", name, len(g.members)), Status: worst}
	if resolved == len(g.members) {
		m.Title, m.Status = fmt.Sprintf("%s: %d alerts resolved", name, len(g.members)), chat.StatusOK
	}
	if m.Status == chat.StatusNone {
		m.Status = severityOf(g.common["severity"])
	}
	m.Facts = []chat.Fact{
		{Label: "Group", Text: labelText(g.common), Code: true},
		{Label: "Alerts", Text: fmt.Sprintf("%d: %d diagnosed, %d queued or running, %d not run, %d resolved", len(g.members), settled, waiting, notRun, resolved)},
	}
	if waiting > 0 {
		m.Facts = append(m.Facts, chat.Fact{Label: "Waiting", Text: fmt.Sprintf("%d alert runs are queued or running in runbot", a.queue.depth())})
	}
	m.Sections = []chat.Section{{Heading: "Alerts", Lines: lines}}
	m.Notes = []string{"One message for the whole group. A run that needs someone (a fix to approve, a run that could not start) posts in this thread; every run's report: runbot show RUN-ID."}
	return m
}

// groupLine is one alert's line in its group's summary. Callers hold
// Receiver.mu.
func (t *alertTrack) groupLine(common map[string]string) (chat.Status, string) {
	own := map[string]string{}
	for k, v := range t.labels {
		if _, shared := common[k]; !shared {
			own[k] = v
		}
	}
	parts := []string{labelText(own), t.route.Runbook}
	st := chat.StatusPending
	switch {
	case t.problem != "":
		st = chat.StatusError
		parts = append(parts, "not run: "+t.problem)
	case t.verdict != "":
		st = t.verdictStatus
		parts = append(parts, t.verdict)
	case t.workID != "":
		parts = append(parts, "queued or running")
	default:
		parts = append(parts, "queueing")
	}
	if t.runID != "" {
		parts = append(parts, t.runID)
	}
	if t.spoke {
		parts = append(parts, "its message is in this thread")
	}
	if t.resolved {
		parts = append(parts, "resolved")
	}
	return st, strings.Join(parts, " · ")
}

// labelText shows labels as k=v, sorted, in one line.
func labelText(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	if len(parts) == 0 {
		return "(no labels of its own)"
	}
	return strings.Join(parts, " ")
}

// statusRank orders statuses by how much they ask for attention.
var statusRank = map[chat.Status]int{
	chat.StatusNone: 0, chat.StatusOK: 1, chat.StatusInfo: 2, chat.StatusSkipped: 2, chat.StatusPending: 3,
	chat.StatusRunning: 3, chat.StatusInconclusive: 4, chat.StatusWarning: 5, chat.StatusError: 6, chat.StatusCritical: 7,
}

func worse(a, b chat.Status) chat.Status {
	if statusRank[b] > statusRank[a] {
		return b
	}
	return a
}

// commonLabels are the labels all alerts share, with the same value.
func commonLabels(alerts []Alert) map[string]string {
	if len(alerts) == 0 {
		return nil
	}
	out := maps.Clone(alerts[0].Labels)
	for _, al := range alerts[1:] {
		for k, v := range out {
			if al.Labels[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// runEnded shows a run's verdict beside its alert: in the group's
// summary, or in the alert's own message.
func (a *Receiver) runEnded(e dispatch.RunEnd) {
	a.mu.Lock()
	t := a.byWork[e.WorkID]
	var g *alertGroup
	if t != nil {
		t.runID, t.verdict, t.verdictStatus, t.spoke = e.RunID, e.Verdict, e.Status, e.Message
		if t.verdict == "" {
			t.verdict = "finished"
		}
		g = t.group
	}
	a.mu.Unlock()
	if t == nil {
		return
	}
	if g != nil {
		a.showGroup(g)
		return
	}
	a.showAlert(t)
}
