package remote

import (
	"bufio"
	"net"
)

// busReadBuffer is large enough for a unit read's nine replies at once.
const busReadBuffer = 4096

// BufferedReads serves a connection's reads from a buffer. godbus decodes
// a message with a read per field, a few bytes each; over SSH each of those
// is a call into the channel's buffer under its lock, some thirty reads a
// reply. Buffered, the replies that have arrived are one read, whatever
// their fields.
type BufferedReads struct {
	net.Conn
	r *bufio.Reader
}

// NewBufferedReads buffers the reads of c.
func NewBufferedReads(c net.Conn) *BufferedReads {
	return &BufferedReads{Conn: c, r: bufio.NewReaderSize(c, busReadBuffer)}
}

// Read reads from the buffer, filling it from the connection when empty.
func (c *BufferedReads) Read(p []byte) (int, error) { return c.r.Read(p) }
