package kvevents

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// The ZeroMQ library reads a frame by allocating the length its header claims, so a peer could
// make the gateway allocate exabytes with nine bytes, or send a message of endless frames, or
// connect and never finish its handshake (which the library performs on its accept loop). The
// guard sits between the library and each TCP connection: it follows the ZMTP 3 framing of the
// bytes the library reads and fails the read, closing that connection, before a frame past the
// limits is read; it bounds the connections and the time a handshake may take.

// ZMTP 3 framing.
const (
	greetingLen  = 64 // signature, version, mechanism, as-server, filler
	flagMore     = 0x01
	flagLong     = 0x02
	flagCommand  = 0x04
	flagReserved = 0xf8
)

// Why the guard closed a connection, the reason label of
// switchyard_gateway_kv_events_refused_total.
const (
	refusedConnections = "too_many_connections"
	refusedFrame       = "frame_too_large"
	refusedMessage     = "message_too_large"
	refusedFrames      = "too_many_frames"
	refusedFraming     = "bad_framing"
	refusedHandshake   = "handshake_timeout"
	refusedPeer        = "bad_handshake"
)

// maxHandshakeCommand bounds the READY command a peer sends in its handshake.
const maxHandshakeCommand = 4096

// guardError is a violation: the read fails with it and the library closes the connection.
type guardError struct{ reason, detail string }

func (e *guardError) Error() string { return "kvevents: " + e.reason + ": " + e.detail }

// guardLimits are a listener's bounds and the hook that counts refusals.
type guardLimits struct {
	maxMessage, maxFrames, maxConns int
	handshake                       time.Duration
	refused                         func(reason string)
}

// guardTransport is the zmq4 transport "kvguard": endpoints kvguard://ID/HOST:PORT listen on
// HOST:PORT with the limits registered under ID.
type guardTransport struct{}

const guardScheme = "kvguard"

var (
	registerOnce sync.Once
	guardSeq     atomic.Uint64
	guards       sync.Map // id string -> *guardLimits
)

func registerGuard() {
	registerOnce.Do(func() {
		if err := zmq4.RegisterTransport(guardScheme, guardTransport{}); err != nil {
			panic(fmt.Sprintf("kvevents: %v", err)) // only this package registers it, once
		}
	})
}

// guardEndpoint registers lim and returns the endpoint that listens on addr with it, and a
// function that forgets lim.
func guardEndpoint(addr string, lim *guardLimits) (string, func()) {
	registerGuard()
	id := strconv.FormatUint(guardSeq.Add(1), 10)
	guards.Store(id, lim)
	return guardScheme + "://" + id + "/" + addr, func() { guards.Delete(id) }
}

func (guardTransport) Dial(context.Context, transport.Dialer, string) (net.Conn, error) {
	return nil, errors.New("kvevents: the guarded transport only listens")
}

func (guardTransport) Addr(ep string) (string, error) { return ep, nil }

func (guardTransport) Listen(_ context.Context, ep string) (net.Listener, error) {
	id, addr, ok := strings.Cut(ep, "/")
	v, found := guards.Load(id)
	if !ok || !found {
		return nil, fmt.Errorf("kvevents: unknown guarded endpoint %q", ep)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &guardListener{Listener: ln, lim: v.(*guardLimits)}, nil
}

// guardListener bounds the open connections and wraps each in a guardConn.
type guardListener struct {
	net.Listener
	lim  *guardLimits
	open atomic.Int64
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > int64(l.lim.maxConns) {
			l.open.Add(-1)
			l.lim.refused(refusedConnections)
			_ = c.Close()
			continue
		}
		gc := &guardConn{Conn: c, l: l, handshaking: true}
		gc.mu.Lock()
		gc.timer = time.AfterFunc(l.lim.handshake, gc.handshakeExpired)
		gc.mu.Unlock()
		return gc, nil
	}
}

// guardConn follows the ZMTP framing of what is read through it.
type guardConn struct {
	net.Conn
	l     *guardListener
	close sync.Once

	timer       *time.Timer
	mu          sync.Mutex // guards handshaking and timer against the timer's goroutine
	greeting    [greetingLen]byte
	greeted     int  // greeting bytes seen
	handshaking bool // until the peer's READY command has passed and been checked
	ready       []byte
	hdr         [9]byte
	hdrHave     int
	hdrNeed     int    // 0: between frames
	body        uint64 // bytes of the current frame still to pass
	command     bool
	more        bool
	msgBytes    uint64
	frames      int
}

// Close closes the connection once; the library does not close a connection whose handshake
// failed, so the guard closes those itself.
func (c *guardConn) Close() error {
	var err error
	c.close.Do(func() {
		c.mu.Lock()
		c.timer.Stop()
		c.mu.Unlock()
		c.l.open.Add(-1)
		err = c.Conn.Close()
	})
	return err
}

// handshakeExpired closes a connection whose peer has not completed its handshake in time.
func (c *guardConn) handshakeExpired() {
	c.mu.Lock()
	late := c.handshaking
	c.mu.Unlock()
	if late {
		c.l.lim.refused(refusedHandshake)
		_ = c.Close()
	}
}

func (c *guardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if gerr := c.scan(p[:n]); gerr != nil {
			var ge *guardError
			if errors.As(gerr, &ge) {
				c.l.lim.refused(ge.reason)
			}
			_ = c.Close()
			return 0, gerr
		}
	}
	return n, err
}

// scan advances the framing state over b, failing before a frame past the limits is read.
func (c *guardConn) scan(b []byte) error {
	for len(b) > 0 {
		switch {
		case c.greeted < greetingLen:
			k := copy(c.greeting[c.greeted:], b)
			c.greeted, b = c.greeted+k, b[k:]
			if c.greeted == greetingLen {
				if err := checkGreeting(&c.greeting); err != nil {
					return err
				}
			}
		case c.body > 0:
			k := min(c.body, uint64(len(b)))
			if c.command && c.handshaking {
				c.ready = append(c.ready, b[:k]...)
			}
			c.body, b = c.body-k, b[k:]
			if c.body == 0 {
				if err := c.endFrame(); err != nil {
					return err
				}
			}
		default:
			var err error
			if b, err = c.header(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// header consumes frame-header bytes from b and checks the frame once its length is known.
func (c *guardConn) header(b []byte) ([]byte, error) {
	if c.hdrNeed == 0 {
		fl := b[0]
		if fl&flagReserved != 0 {
			return nil, &guardError{refusedFraming, fmt.Sprintf("frame flags %#x", fl)}
		}
		c.hdr[0], c.hdrHave, c.hdrNeed = fl, 1, 2
		if fl&flagLong != 0 {
			c.hdrNeed = 9
		}
		b = b[1:]
	}
	k := copy(c.hdr[c.hdrHave:c.hdrNeed], b)
	c.hdrHave += k
	b = b[k:]
	if c.hdrHave < c.hdrNeed {
		return b, nil
	}
	var size uint64
	for _, v := range c.hdr[1:c.hdrNeed] {
		size = size<<8 | uint64(v)
	}
	fl := c.hdr[0]
	c.hdrNeed, c.command, c.more = 0, fl&flagCommand != 0, fl&flagMore != 0
	if err := c.check(size); err != nil {
		return nil, err
	}
	c.body = size
	if size == 0 {
		return b, c.endFrame()
	}
	return b, nil
}

func (c *guardConn) check(size uint64) error {
	limit := uint64(c.l.lim.maxMessage)
	switch {
	case size > limit:
		return &guardError{refusedFrame, fmt.Sprintf("frame of %d bytes, limit %d", size, limit)}
	case c.handshaking && (!c.command || size > maxHandshakeCommand):
		return &guardError{refusedPeer, fmt.Sprintf("handshake frame of %d bytes, command %t", size, c.command)}
	case c.command:
		return nil
	case c.msgBytes+size > limit:
		return &guardError{refusedMessage, fmt.Sprintf("message past %d bytes", limit)}
	case c.frames+1 > c.l.lim.maxFrames:
		return &guardError{refusedFrames, fmt.Sprintf("message past %d frames", c.l.lim.maxFrames)}
	}
	c.msgBytes += size
	c.frames++
	return nil
}

func (c *guardConn) endFrame() error {
	if c.command {
		if !c.handshaking {
			return nil
		}
		if err := checkReady(c.ready); err != nil {
			return err
		}
		c.mu.Lock()
		c.handshaking, c.ready = false, nil
		c.timer.Stop()
		c.mu.Unlock()
		return nil
	}
	if !c.more {
		c.msgBytes, c.frames = 0, 0
	}
	return nil
}

// checkGreeting accepts a ZMTP 3 greeting with the NULL mechanism, the only one the socket
// speaks.
func checkGreeting(g *[greetingLen]byte) error {
	if g[0] != 0xff || g[9] != 0x7f || g[10] < 3 {
		return &guardError{refusedPeer, "not a ZMTP 3 greeting"}
	}
	if mech := strings.TrimRight(string(g[12:32]), "\x00"); mech != "NULL" {
		return &guardError{refusedPeer, fmt.Sprintf("security mechanism %q, want NULL", mech)}
	}
	return nil
}

// checkReady accepts a READY command from a PUB or XPUB socket.
func checkReady(b []byte) error {
	const name = "\x05READY"
	if !bytes.HasPrefix(b, []byte(name)) {
		return &guardError{refusedPeer, "first command is not READY"}
	}
	for p := b[len(name):]; len(p) > 0; {
		nl := int(p[0])
		if len(p) < 1+nl+4 {
			break
		}
		key := string(p[1 : 1+nl])
		vl := binary.BigEndian.Uint32(p[1+nl:])
		p = p[1+nl+4:]
		if uint64(vl) > uint64(len(p)) {
			break
		}
		if strings.EqualFold(key, "Socket-Type") {
			if v := string(p[:vl]); v == "PUB" || v == "XPUB" {
				return nil
			}
			return &guardError{refusedPeer, fmt.Sprintf("peer socket type %q, want PUB", p[:vl])}
		}
		p = p[vl:]
	}
	return &guardError{refusedPeer, "READY names no Socket-Type"}
}

// discardLog silences the ZeroMQ library's own logger; the subscriber logs what matters.
var discardLog = log.New(io.Discard, "", 0)
