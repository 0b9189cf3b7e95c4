package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// The KV transfer wire protocol between a decode engine and a prefill engine's
// bootstrap port. It stands in for NIXL/Mooncake: a control plane (decode announces
// the rooms it pre-allocated, acknowledges completed transfers, forwards aborts)
// and a data plane (prefill sends the KV bytes of a room). One persistent TCP
// connection per decode/prefill pair carries every room, like a transfer engine
// session. Frames are a text header line, optionally followed by a payload:
//
//	decode -> prefill   PREALLOC <room>     decode reserved KV for room and is ready to receive
//	decode -> prefill   DONE <room>         decode polled the transfer as successful
//	decode -> prefill   ABORT <room>        the request was aborted on decode
//	prefill -> decode   KV <room> <n>       followed by n bytes of KV data
//	prefill -> decode   FAIL <room> <why>   prefill gave up on the room
const (
	kvPrealloc = "PREALLOC"
	kvDone     = "DONE"
	kvAbort    = "ABORT"
	kvData     = "KV"
	kvFail     = "FAIL"
)

// errKVClosed is returned for frames sent on a session that was torn down.
var errKVClosed = errors.New("kv session closed")

// maxKVPayload bounds one room's payload so a huge prompt cannot exhaust memory.
const maxKVPayload = 1 << 20

// kvPattern is the byte pattern KV payloads are cut from.
var kvPattern = func() []byte {
	b := make([]byte, maxKVPayload)
	for i := range b {
		b[i] = byte(i * 31)
	}
	return b
}()

// kvFrame is one decoded frame header.
type kvFrame struct {
	op     string
	room   uint64
	n      int    // KV payload length
	reason string // FAIL reason
}

func readKVFrame(r *bufio.Reader) (kvFrame, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return kvFrame{}, err
	}
	fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
	if len(fields) < 2 {
		return kvFrame{}, fmt.Errorf("malformed kv frame %q", line)
	}
	room, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return kvFrame{}, fmt.Errorf("malformed kv room in %q: %w", line, err)
	}
	f := kvFrame{op: fields[0], room: room}
	switch f.op {
	case kvData:
		if len(fields) != 3 {
			return f, fmt.Errorf("kv frame without length: %q", line)
		}
		if f.n, err = strconv.Atoi(fields[2]); err != nil || f.n < 0 || f.n > maxKVPayload {
			return f, fmt.Errorf("bad kv length in %q", line)
		}
	case kvFail:
		if len(fields) == 3 {
			f.reason = fields[2]
		}
	case kvPrealloc, kvDone, kvAbort:
	default:
		return f, fmt.Errorf("unknown kv frame %q", line)
	}
	return f, nil
}

// kvWriter serialises frames from many goroutines onto one connection. Frames are
// appended to a buffer and written by one flusher goroutine, so that under load many
// frames share one write system call instead of costing one each. A write error is
// not returned to the sender: it breaks the connection, whose reader then reports the
// session lost, which fails every room bound to it.
type kvWriter struct {
	mu      sync.Mutex
	pending []byte
	spare   []byte
	err     error
	w       io.Writer
	kick    chan struct{}
	done    chan struct{}
}

func newKVWriter(w io.Writer) *kvWriter {
	k := &kvWriter{w: w, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go k.flush()
	return k
}

func (k *kvWriter) send(op string, room uint64, extra string, payload []byte) error {
	k.mu.Lock()
	if k.err != nil {
		k.mu.Unlock()
		return k.err
	}
	k.pending = append(k.pending, op...)
	k.pending = append(k.pending, ' ')
	k.pending = strconv.AppendUint(k.pending, room, 10)
	if extra != "" {
		k.pending = append(k.pending, ' ')
		k.pending = append(k.pending, extra...)
	}
	k.pending = append(k.pending, '\n')
	k.pending = append(k.pending, payload...)
	k.mu.Unlock()
	select {
	case k.kick <- struct{}{}:
	default:
	}
	return nil
}

// flush writes whatever accumulated, until close.
func (k *kvWriter) flush() {
	for {
		select {
		case <-k.done:
			return
		case <-k.kick:
		}
		k.mu.Lock()
		buf := k.pending
		k.pending, k.spare = k.spare[:0], nil
		k.mu.Unlock()
		if len(buf) == 0 {
			k.mu.Lock()
			k.spare = buf
			k.mu.Unlock()
			continue
		}
		_, err := k.w.Write(buf)
		k.mu.Lock()
		if err != nil && k.err == nil {
			k.err = fmt.Errorf("write kv frames: %w", err)
		}
		k.spare = buf[:0]
		k.mu.Unlock()
	}
}

// close stops the flusher; frames not yet written are dropped with the connection.
func (k *kvWriter) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err == nil {
		k.err = errKVClosed
	}
	select {
	case <-k.done:
	default:
		close(k.done)
	}
}
