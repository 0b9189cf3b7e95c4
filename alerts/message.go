package alerts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runbot/runbot/chat"
	"github.com/runbot/runbot/runview"
)

// maxAlertLabels bounds the labels an alert's message lists.
const maxAlertLabels = 20

// view renders the alert's own message: what fires, how often it was
// seen, what runbot does about it and, once the run ended, its verdict.
// Callers hold Receiver.mu. Label and annotation values are
// shown as plain text, whatever they hold.
func (t *alertTrack) view() chat.Message {
	name := t.alert.Name()
	m := chat.Message{Title: name + " firing", Status: severityOf(t.alert.Labels["severity"])}
	if t.resolved {
		m.Title, m.Status = name+" resolved", chat.StatusOK
	}
	m.Facts = []chat.Fact{{Label: "Alert", Text: name}}
	if sev := t.alert.Labels["severity"]; sev != "" {
		m.Facts = append(m.Facts, chat.Fact{Label: "Severity", Text: sev})
	}
	m.Facts = append(m.Facts, chat.Fact{Label: "Fingerprint", Text: t.alert.Fingerprint, Code: true})

	if s := firstAnnotation(t.alert.Annotations, "summary", "message", "description"); s != "" {
		m.Sections = append(m.Sections, chat.Section{Text: s})
	}
	seen := chat.Section{Heading: "Deliveries"}
	if !t.alert.StartsAt.IsZero() {
		seen.Lines = append(seen.Lines, chat.Line{Text: "Firing since " + chat.Stamp(t.alert.StartsAt)})
	}
	seen.Lines = append(seen.Lines, chat.Line{Text: fmt.Sprintf("Seen %s, last at %s", times(t.seen), chat.Stamp(t.lastAt))})
	if t.resolved {
		seen.Lines = append(seen.Lines, chat.Line{Status: chat.StatusOK, Text: "Resolved at " + chat.Stamp(t.resolvedAt)})
	}
	m.Sections = append(m.Sections, seen)

	labels := chat.Section{Heading: "Labels"}
	keys := slices.Sorted(maps.Keys(t.alert.Labels))
	for i, k := range keys {
		if i == maxAlertLabels {
			labels.Lines = append(labels.Lines, chat.Line{Text: fmt.Sprintf("… and %d more", len(keys)-i)})
			break
		}
		labels.Lines = append(labels.Lines, chat.Line{Text: k + "=" + t.alert.Labels[k], Code: true})
	}
	m.Sections = append(m.Sections, labels)

	run := chat.Section{Heading: "Runbook " + t.route.Runbook}
	if p := runview.ParamText(t.route.Shown); p != "" {
		run.Lines = append(run.Lines, chat.Line{Text: p, Code: true})
	}
	switch {
	case t.problem != "":
		run.Status = chat.StatusError
		run.Lines = append(run.Lines, chat.Line{Status: chat.StatusError, Text: "Not run: " + t.problem})
	case t.verdict != "":
		run.Status = t.verdictStatus
		run.Lines = append(run.Lines, chat.Line{Status: t.verdictStatus, Text: t.verdict + " (run " + t.runID + "; its message is in this thread)"})
	case t.workID != "":
		run.Lines = append(run.Lines, chat.Line{Text: "The run is in this thread."})
	default:
		run.Status = chat.StatusPending
		run.Lines = append(run.Lines, chat.Line{Text: "Queueing the run…"})
	}
	m.Sections = append(m.Sections, run)

	src := "From " + t.alert.Source
	if t.alert.Receiver != "" {
		src += ", receiver " + t.alert.Receiver
	}
	if t.alert.ExternalURL != "" {
		src += " at " + t.alert.ExternalURL
	}
	m.Notes = append(m.Notes, src)
	if t.alert.GeneratorURL != "" {
		m.Notes = append(m.Notes, "Source: "+t.alert.GeneratorURL)
	}
	return m
}

// resolvedView is the reply in the alert's thread when it resolves.
func (t *alertTrack) resolvedView() chat.Message {
	text := "Resolved at " + chat.Stamp(t.resolvedAt)
	if !t.alert.StartsAt.IsZero() && t.resolvedAt.After(t.alert.StartsAt) {
		text += fmt.Sprintf(", after firing for %s", t.resolvedAt.Sub(t.alert.StartsAt).Round(time.Second))
	}
	text += fmt.Sprintf("; seen %s.", times(t.seen))
	return chat.Message{Title: t.alert.Name() + " resolved", Status: chat.StatusOK, Sections: []chat.Section{{Text: text}}}
}

func severityOf(s string) chat.Status {
	switch strings.ToLower(s) {
	case "warning", "warn":
		return chat.StatusWarning
	case "info", "none":
		return chat.StatusInfo
	}
	return chat.StatusCritical
}

func firstAnnotation(ann map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(ann[k]); v != "" {
			return v
		}
	}
	return ""
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}
