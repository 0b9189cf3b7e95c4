package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler is a slog.Handler that passes every record's message and
// attribute values through a Redactor before the inner handler writes
// them. Logs are read by more people than the store (a journal shipped to
// a log service, a paste into a ticket), and what they carry is often a
// command's output or an error quoting it: the secrets Slack hides must
// not reach them either.
type Handler struct {
	inner slog.Handler
	r     *Redactor
}

// NewHandler wraps inner; a nil r redacts nothing.
func NewHandler(inner slog.Handler, r *Redactor) *Handler {
	return &Handler{inner: inner, r: r}
}

// Enabled reports what the inner handler reports.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle writes a redacted copy of rec.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	if h.r == nil {
		return h.inner.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs redacts the attributes once, when they are attached.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if h.r == nil {
		return &Handler{inner: h.inner.WithAttrs(attrs)}
	}
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &Handler{inner: h.inner.WithAttrs(red), r: h.r}
}

// WithGroup keeps redacting inside the group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), r: h.r}
}

// attr redacts one attribute's value. Strings, errors and Stringers are
// redacted as the text they print; any other value is kept as it is
// (numbers, times, structured values a JSON handler encodes) unless its
// printed form holds a secret, in which case that redacted form replaces
// it.
func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		red := make([]any, len(group))
		for i, g := range group {
			red[i] = h.attr(g)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.Redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.r.Redact(x.String()))
		default:
			s := fmt.Sprint(x)
			if red := h.r.Redact(s); red != s {
				return slog.String(a.Key, red)
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
