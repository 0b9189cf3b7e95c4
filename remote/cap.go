package remote

import "bytes"

// TruncationMarker ends output that the cap cut, so nobody mistakes a partial
// log for a complete one.
const TruncationMarker = "\n[... output truncated by runbot ...]\n"

// CapWriter keeps at most max bytes and remembers that it dropped the
// rest. It never returns an error, so a chatty command is not killed by a
// full buffer; it just stops being recorded. Every runner captures a
// command's output through one.
type CapWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

// NewCapWriter returns a CapWriter that keeps max bytes, or
// DefaultMaxOutput when max is not positive.
func NewCapWriter(max int) *CapWriter {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	return &CapWriter{max: max}
}

// Write keeps what still fits in p and reports all of it written.
func (w *CapWriter) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	if room <= 0 {
		if len(p) > 0 {
			w.truncated = true
		}
		return len(p), nil
	}
	if len(p) > room {
		w.buf.Write(p[:room])
		w.truncated = true
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}

// Bytes is what was kept, ending in TruncationMarker when some was dropped.
func (w *CapWriter) Bytes() []byte {
	if w.truncated {
		return append(w.buf.Bytes(), TruncationMarker...)
	}
	return w.buf.Bytes()
}

// Truncated says whether some output was dropped.
func (w *CapWriter) Truncated() bool { return w.truncated }
