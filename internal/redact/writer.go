package redact

import (
	"bytes"
	"fmt"
	"io"

	"github.com/runbot/runbot/internal/secret"
)

// Writer is an output redacted before it reaches dst: a command's
// standard output. It holds what is written until Flush, so that a secret
// printed in pieces (a private key line by line) is matched whole; JSON
// is redacted string by string, so that it stays valid. Once Direct, each
// write is redacted and passed on at once, for output that must appear
// before a prompt. A notice, when set, goes to notices (stderr) once,
// when something is first written out: a command that fails before it
// shows anything is not cluttered with it.
type Writer struct {
	dst     io.Writer
	r       *Redactor
	json    bool
	direct  bool
	buf     bytes.Buffer
	notice  string
	notices io.Writer
}

// NewWriter redacts what is written to dst with r; with json, what is
// written must be JSON documents, and they are redacted value by value.
// notice, when not empty, is written to notices before the first output.
func NewWriter(dst io.Writer, r *Redactor, json bool, notice string, notices io.Writer) *Writer {
	return &Writer{dst: dst, r: r, json: json, notice: notice, notices: notices}
}

func (w *Writer) noticeOnce() {
	if w.notice != "" {
		// The notice is a courtesy beside the output: a failed write to
		// stderr has nowhere left to be reported.
		_, _ = io.WriteString(w.notices, w.notice)
		w.notice = ""
	}
}

// Write holds p, or once Direct writes it redacted.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.direct {
		return w.buf.Write(p)
	}
	w.noticeOnce()
	if _, err := io.WriteString(w.dst, w.r.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// AlsoHide has w hide values too (a run's secret params) and returns its
// redactor, now hiding them, for what the command writes elsewhere (a
// recording, a picture).
func (w *Writer) AlsoHide(values ...secret.Value) (*Redactor, error) {
	if len(values) == 0 {
		return w.r, nil
	}
	r, err := w.r.With(nil, values...)
	if err != nil {
		return nil, fmt.Errorf("hide the secret params: %w", err)
	}
	w.r = r
	return r, nil
}

// Redactor is what w redacts with now.
func (w *Writer) Redactor() *Redactor { return w.r }

// Direct flushes what is held and passes every later write on at once.
func (w *Writer) Direct() error {
	err := w.Flush()
	w.direct = true
	return err
}

// Flush writes what is held, redacted.
func (w *Writer) Flush() error {
	if w.buf.Len() == 0 {
		return nil
	}
	defer w.buf.Reset()
	w.noticeOnce()
	if w.json {
		out, err := w.r.JSON(w.buf.Bytes())
		if err != nil {
			return fmt.Errorf("redact the output: %w", err)
		}
		_, err = w.dst.Write(out)
		return err
	}
	_, err := io.WriteString(w.dst, w.r.Redact(w.buf.String()))
	return err
}

// Error is an error as it is shown: redacted, as it may quote what a
// command printed. It unwraps to the error, so exit codes and typed
// errors still tell what happened.
type Error struct {
	Err error
	R   *Redactor
}

func (e Error) Error() string { return e.R.Redact(e.Err.Error()) }
func (e Error) Unwrap() error { return e.Err }
