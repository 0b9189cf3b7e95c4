package console

import (
	"fmt"
	"io"
)

// Output writes a command's text output and keeps the first write error,
// so that lost output (a closed pipe, a full disk) is reported once, when
// the command ends, instead of being checked on every line. After an error
// it writes nothing more.
type Output struct {
	w   io.Writer
	err error
}

// NewOutput wraps w; an *Output is returned as it is, so that nested
// printers share one error.
func NewOutput(w io.Writer) *Output {
	if o, ok := w.(*Output); ok {
		return o
	}
	return &Output{w: w}
}

// Write writes p unless an earlier write failed.
func (o *Output) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.err = err
	return n, err
}

// Printf writes as fmt.Fprintf does.
func (o *Output) Printf(format string, a ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprintf(o.w, format, a...)
	}
}

// Println writes as fmt.Fprintln does.
func (o *Output) Println(a ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprintln(o.w, a...)
	}
}

// Print writes as fmt.Fprint does.
func (o *Output) Print(a ...any) {
	if o.err == nil {
		_, o.err = fmt.Fprint(o.w, a...)
	}
}

// Err is the first write error, or nil.
func (o *Output) Err() error { return o.err }

// Note writes a message for the person at the terminal to w (stderr). A
// failed write is dropped: stderr is where failures are reported, so
// there is nowhere left to report this one.
func Note(w io.Writer, format string, a ...any) {
	_, _ = fmt.Fprintf(w, format, a...)
}

// Dash is s, or "-" for an empty cell of a table.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
