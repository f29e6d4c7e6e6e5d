package replica

import (
	"context"
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

// guardedTransport is memberlist's NetTransport with its accepted streams guarded and its dialled
// streams cut when the pool stops.
type guardedTransport struct {
	*memberlist.NetTransport
	maxBytes int
	timeout  time.Duration
	onCut    func()
	streams  chan net.Conn
	closing  chan struct{} // closed when Shutdown starts: streams are closed, not handed on
	stopped  chan struct{} // closed when the inner transport stopped accepting
	exited   chan struct{} // closed when forward returned
	shutdown sync.Once

	dialMu  sync.Mutex
	dialCtx context.Context // cancelled by abortDials
	cancel  context.CancelFunc
	dials   map[*dialledConn]struct{}
}

func newGuardedTransport(inner *memberlist.NetTransport, maxBytes int, timeout time.Duration,
	onCut func(),
) *guardedTransport {
	ctx, cancel := context.WithCancel(context.Background())
	t := &guardedTransport{NetTransport: inner, maxBytes: maxBytes, timeout: timeout, onCut: onCut,
		streams: make(chan net.Conn), closing: make(chan struct{}), stopped: make(chan struct{}),
		exited: make(chan struct{}), dialCtx: ctx, cancel: cancel, dials: map[*dialledConn]struct{}{}}
	go t.forward()
	return t
}

// forward hands the inner transport's streams on, guarded, until the inner transport stopped.
// The inner transport's accept loop blocks until its stream is taken, and its Shutdown waits for
// that loop: forward keeps taking streams (closing them once Shutdown started, when memberlist
// may no longer read) until the inner Shutdown returned, so that it cannot hang.
func (t *guardedTransport) forward() {
	defer close(t.exited)
	for {
		select {
		case c := <-t.NetTransport.StreamCh():
			if t.timeout > 0 {
				_ = c.SetDeadline(time.Now().Add(t.timeout))
			}
			select {
			case t.streams <- &guardedConn{Conn: c, left: int64(t.maxBytes), onCut: t.onCut}:
			case <-t.closing:
				_ = c.Close()
			}
		case <-t.stopped:
			return
		}
	}
}

// StreamCh delivers the guarded streams.
func (t *guardedTransport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown cuts the dialled streams, shuts the inner transport down and stops forwarding. It is
// safe to call more than once.
func (t *guardedTransport) Shutdown() error {
	var err error
	t.shutdown.Do(func() {
		t.abortDials()
		close(t.closing)
		err = t.NetTransport.Shutdown()
		close(t.stopped)
		<-t.exited
	})
	return err
}

// DialTimeout dials like DialAddressTimeout (memberlist.Transport).
func (t *guardedTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout dials a peer's stream (join, push/pull, TCP ping) like NetTransport, and
// keeps the connection until it is closed so that abortDials can cut it: memberlist waits for a
// silent peer's reply up to its TCP timeout, with no way to cancel (memberlist.NodeAwareTransport).
func (t *guardedTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(t.dialCtx, "tcp", a.Addr)
	if err != nil {
		return nil, err
	}
	t.dialMu.Lock()
	defer t.dialMu.Unlock()
	if t.dialCtx.Err() != nil {
		_ = c.Close()
		return nil, errDialsAborted
	}
	dc := &dialledConn{Conn: c, t: t}
	t.dials[dc] = struct{}{}
	return dc, nil
}

// abortDials fails the dials in progress and every later one, and closes the dialled streams:
// a join waiting on a silent seed returns at once.
func (t *guardedTransport) abortDials() {
	t.dialMu.Lock()
	t.cancel()
	dials := t.dials
	t.dials = map[*dialledConn]struct{}{}
	t.dialMu.Unlock()
	for c := range dials {
		_ = c.Conn.Close()
	}
}

// errDialsAborted reports a dial after the pool stopped.
var errDialsAborted = errors.New("replica: pool stopping, no new streams")

// dialledConn is a dialled stream that leaves its transport's set when closed.
type dialledConn struct {
	net.Conn
	t *guardedTransport
}

func (c *dialledConn) Close() error {
	c.t.dialMu.Lock()
	delete(c.t.dials, c)
	c.t.dialMu.Unlock()
	return c.Conn.Close()
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
