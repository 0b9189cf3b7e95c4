package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runbot/runbot/runbooks"
)

// The size of the pictures WritePNG and PNG make: readable in Slack's
// preview, sharp when opened.
const (
	Width  = 1200
	Height = 800
)

// PNG renders a run's timeline at the default size.
func PNG(rep *runbooks.Report, opts Options) ([]byte, error) {
	c, err := FromReport(rep, opts)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := c.Render(&buf, Width, Height); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePNG renders a run's timeline at the default size into the file at
// path, replacing it. It is what `runbot run --timeline FILE` and
// `runbot show RUN --timeline FILE` call. Its error says that no picture
// was drawn into path and why: a run whose checks observed nothing over
// time (a runbook of commands and files only) has nothing to draw, which
// the error explains (it wraps ErrNothingToDraw), since the user asked for
// a picture and gets none.
func WritePNG(path string, rep *runbooks.Report, opts Options) error {
	err := writePNG(path, rep, opts)
	switch {
	case errors.Is(err, ErrNothingToDraw):
		return fmt.Errorf("no timeline drawn into %s: %w (a timeline shows HTTP probes, log progress, error lines and metric samples over time, which only http_probe, log_progress and metrics_sample checks record)", path, err)
	case err != nil:
		return fmt.Errorf("no timeline drawn into %s: %w", path, err)
	}
	return nil
}

func writePNG(path string, rep *runbooks.Report, opts Options) error {
	data, err := PNG(rep, opts)
	if err != nil {
		return err
	}
	// Write next to the target and rename, so that a reader never sees
	// half a picture.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".timeline-*.png")
	if err != nil {
		return fmt.Errorf("write timeline: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write timeline %s: %w", path, err)
	}
	return nil
}

// ForChat renders a run's timeline for the chat to upload: nil (and no
// error) when the run recorded nothing to draw, so that runs without
// timestamped evidence get no picture rather than an error note. Its
// signature is dispatch.TimelineFunc's.
func ForChat(rep *runbooks.Report) ([]byte, error) {
	data, err := PNG(rep, Options{})
	if errors.Is(err, ErrNothingToDraw) {
		return nil, nil
	}
	return data, err
}
