package main

import (
	"io"
)

// closeInto closes c and, when the function it is deferred in has not
// already failed, returns the close error through *err.
func closeInto(err *error, c io.Closer) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}
