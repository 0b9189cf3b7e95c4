package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbot/runbot/internal/secret"
)

type stringer string

func (s stringer) String() string { return string(s) }

// TestHandlerRedactsEveryPartOfARecord logs a planted secret in each
// place a record can carry it, through both of slog's handlers.
func TestHandlerRedactsEveryPartOfARecord(t *testing.T) {
	t.Parallel()
	const planted = "planted-4f9c2e1d"
	r, err := New(nil, secret.New(planted))
	require.NoError(t, err)
	cases := []struct {
		name string
		log  func(*slog.Logger)
	}{
		{"message", func(l *slog.Logger) { l.Info("summary: " + planted) }},
		{"string attr", func(l *slog.Logger) { l.Info("run", "out", "got "+planted) }},
		{"error attr", func(l *slog.Logger) { l.Warn("failed", "err", errors.New("exit 1: "+planted)) }},
		{"stringer attr", func(l *slog.Logger) { l.Info("x", "v", stringer(planted)) }},
		{"map attr", func(l *slog.Logger) { l.Info("queued", "params", map[string]string{"note": planted}) }},
		{"group", func(l *slog.Logger) { l.Info("x", slog.Group("g", "k", planted)) }},
		{"with attrs", func(l *slog.Logger) { l.With("k", planted).Info("x") }},
		{"with group", func(l *slog.Logger) { l.WithGroup("g").Info("x", "k", planted) }},
		{"default pattern", func(l *slog.Logger) { l.Info("x", "out", "password=hunter2") }},
	}
	for _, c := range cases {
		for _, format := range []string{"text", "json"} {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				var buf bytes.Buffer
				var inner slog.Handler = slog.NewTextHandler(&buf, nil)
				if format == "json" {
					inner = slog.NewJSONHandler(&buf, nil)
				}
				c.log(slog.New(NewHandler(inner, r)))
				require.NotContains(t, buf.String(), planted)
				require.NotContains(t, buf.String(), "hunter2")
				require.Contains(t, buf.String(), Redacted)
			})
		}
	}
}

// TestHandlerKeepsWhatHoldsNoSecret: values without a secret keep their
// kind, so a JSON log stays as structured as before.
func TestHandlerKeepsWhatHoldsNoSecret(t *testing.T) {
	t.Parallel()
	r, err := New(nil, secret.New("planted-4f9c2e1d"))
	require.NoError(t, err)
	var buf bytes.Buffer
	slog.New(NewHandler(slog.NewJSONHandler(&buf, nil), r)).Info("queued", "n", 3, "params", map[string]string{"secs": "5"})
	require.Contains(t, buf.String(), `"n":3`)
	require.Contains(t, buf.String(), `"params":{"secs":"5"}`)
}
