package remote

import "bytes"

// TruncationMarker ends output that the cap cut, so nobody mistakes a partial
// log for a complete one.
const TruncationMarker = "\n[... output truncated by runbot ...]\n"

// capWriter keeps at most max bytes and remembers that it dropped the rest.
// It never returns an error, so a chatty command is not killed by a full
// buffer; it just stops being recorded.
type capWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func newCapWriter(max int) *capWriter {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	return &capWriter{max: max}
}

func (w *capWriter) Write(p []byte) (int, error) {
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

func (w *capWriter) bytes() []byte {
	if w.truncated {
		return append(w.buf.Bytes(), TruncationMarker...)
	}
	return w.buf.Bytes()
}
