package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
)

// Incoming stream limits. memberlist reads one message per accepted TCP stream. An encrypted
// message starts with the type byte encryptMsg and a 4-byte big-endian length, and memberlist
// reads that many bytes, up to 20 MB, into memory before it tries to decrypt them; so anyone who
// can reach the gossip port could make a node buffer 20 MB per connection without a key. The
// guard in front of memberlist reads the header first, passing nothing further until it has it,
// and cuts a stream whose declared length exceeds the limit before reading its payload; every
// stream is also bounded to the limit in total and to the TCP timeout in time.

// encryptMsgType is memberlist's encryptMsg message type (part of its wire protocol, version 5).
const encryptMsgType = 10

// streamHeaderLen is the type byte and the length of an encrypted stream message.
const streamHeaderLen = 5

// ErrStreamTooLarge reports an incoming gossip stream cut for exceeding Config.MaxStreamBytes.
var ErrStreamTooLarge = errors.New("gossip: incoming stream exceeds the size limit")

// streamLimits bounds accepted streams.
type streamLimits struct {
	maxBytes int           // most bytes one stream may deliver; 0: unbounded
	timeout  time.Duration // deadline from acceptance; 0: none (memberlist sets its own)
}

// guard wraps an accepted stream in the limits.
func (l streamLimits) guard(c net.Conn, m *metrics) net.Conn {
	if l.timeout > 0 {
		_ = c.SetDeadline(time.Now().Add(l.timeout))
	}
	if l.maxBytes <= 0 {
		return c
	}
	return &guardedConn{Conn: c, m: m, left: int64(l.maxBytes), max: l.maxBytes}
}

// guardedConn is an accepted stream that delivers its encrypted-message header before anything
// else, and at most max bytes in all.
type guardedConn struct {
	net.Conn
	m      *metrics
	max    int
	left   int64 // bytes it may still deliver
	header [streamHeaderLen]byte
	got    int  // header bytes seen
	cut    bool // the stream was cut: every later read fails
}

// Read delivers the stream's bytes within the limits. While the header is incomplete it reads
// no further than the header's end, so the declared length is known before a payload byte is.
func (c *guardedConn) Read(b []byte) (int, error) {
	if c.cut {
		return 0, ErrStreamTooLarge
	}
	if c.left <= 0 {
		return 0, c.exceed(fmt.Errorf("%w: more than %d bytes", ErrStreamTooLarge, c.max))
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
		if c.got == streamHeaderLen && c.header[0] == encryptMsgType {
			if declared := binary.BigEndian.Uint32(c.header[1:]); int64(declared) > c.left {
				// The header goes to memberlist, which then fails on the next read.
				_ = c.exceed(ErrStreamTooLarge)
			}
		}
	}
	return n, err
}

// exceed cuts the stream.
func (c *guardedConn) exceed(err error) error {
	c.cut = true
	c.m.streamsCut.Inc()
	_ = c.Close()
	return err
}
