package remote

import (
	"net"
	"sync"
)

// HeldWrites is a connection whose writes can be held back and then sent
// as one. A unit read sends nine D-Bus calls; held, they leave in one
// write, so that over SSH they are one packet for runbot to seal and sshd
// to open and pass on, and one read for systemd, where each call was a
// packet of its own.
type HeldWrites struct {
	net.Conn

	mu   sync.Mutex
	held int // holds not yet released; writes are sent when it is 0
	buf  []byte
}

// Write sends p, or keeps it for release while writes are held.
func (c *HeldWrites) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held > 0 {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Hold keeps writes back until the matching Release. Holds nest, so that
// two reads on one connection never send each other's calls early, and
// Release sends what was kept when the last hold ends.
func (c *HeldWrites) Hold() {
	c.mu.Lock()
	c.held++
	c.mu.Unlock()
}

// Release ends a hold; the last one sends the kept writes in one write.
// An error means the connection failed: the calls are lost, and the
// library's reader, seeing the connection end, fails them.
func (c *HeldWrites) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held--
	if c.held > 0 || len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}
