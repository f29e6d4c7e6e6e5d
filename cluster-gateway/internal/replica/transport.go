package replica

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// memberlist reads one message per accepted TCP stream (join, push/pull). An encrypted message
// starts with the type byte encryptMsg and a 4-byte big-endian length, and memberlist buffers
// that many bytes (up to 20 MB) before it tries to decrypt them: anyone who reaches the port could
// make a replica hold 20 MB per connection without a key. guardedTransport hands memberlist each
// stream behind a reader that delivers the header first and cuts a stream declaring, or sending,
// more than the limit, within the TCP timeout.

// encryptMsgType is memberlist's encryptMsg message type (its wire protocol, version 5).
const encryptMsgType = 10

// streamHeaderLen is the type byte and length of an encrypted stream message.
const streamHeaderLen = 5

// errStreamTooLarge reports an incoming stream cut for exceeding Config.MaxStreamBytes.
var errStreamTooLarge = errors.New("replica: incoming stream exceeds the size limit")

// guardedTransport is memberlist's NetTransport with its accepted streams guarded.
type guardedTransport struct {
	*memberlist.NetTransport
	maxBytes int
	timeout  time.Duration
	onCut    func()
	streams  chan net.Conn
	done     chan struct{}
	once     sync.Once
}

func newGuardedTransport(inner *memberlist.NetTransport, maxBytes int, timeout time.Duration,
	onCut func(),
) *guardedTransport {
	t := &guardedTransport{NetTransport: inner, maxBytes: maxBytes, timeout: timeout, onCut: onCut,
		streams: make(chan net.Conn), done: make(chan struct{})}
	go t.forward()
	return t
}

func (t *guardedTransport) forward() {
	for {
		select {
		case c := <-t.NetTransport.StreamCh():
			if t.timeout > 0 {
				_ = c.SetDeadline(time.Now().Add(t.timeout))
			}
			select {
			case t.streams <- &guardedConn{Conn: c, left: int64(t.maxBytes), onCut: t.onCut}:
			case <-t.done:
				_ = c.Close()
				return
			}
		case <-t.done:
			return
		}
	}
}

// StreamCh delivers the guarded streams.
func (t *guardedTransport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown stops forwarding and shuts the inner transport down.
func (t *guardedTransport) Shutdown() error {
	t.once.Do(func() { close(t.done) })
	return t.NetTransport.Shutdown()
}

// guardedConn delivers its encrypted-message header before anything else, and at most left
// bytes in all.
type guardedConn struct {
	net.Conn
	left   int64
	header [streamHeaderLen]byte
	got    int
	cut    bool
	onCut  func()
}

func (c *guardedConn) Read(b []byte) (int, error) {
	if c.cut {
		return 0, errStreamTooLarge
	}
	if c.left <= 0 {
		return 0, c.exceed()
	}
	if c.got < streamHeaderLen && len(b) > streamHeaderLen-c.got {
		b = b[:streamHeaderLen-c.got]
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.Conn.Read(b)
	c.left -= int64(n)
	if c.got < streamHeaderLen && n > 0 {
		c.got += copy(c.header[c.got:], b[:n])
		if c.got == streamHeaderLen && c.header[0] == encryptMsgType &&
			int64(binary.BigEndian.Uint32(c.header[1:])) > c.left {
			_ = c.exceed() // the header goes to memberlist, which fails on its next read
		}
	}
	return n, err
}

func (c *guardedConn) exceed() error {
	if !c.cut {
		c.cut = true
		if c.onCut != nil {
			c.onCut()
		}
		_ = c.Close()
	}
	return errStreamTooLarge
}
