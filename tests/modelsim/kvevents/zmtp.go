package kvevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ZMTP 3.0, the subset a PUB socket that dials a SUB needs: the greeting, the NULL mechanism's
// READY handshake, and message frames. What the SUB sends afterwards (its subscriptions) is
// read and discarded: every message goes out, and the SUB filters by topic.
const (
	greetingLen      = 64
	flagMore         = 0x01
	flagLong         = 0x02
	flagCommand      = 0x04
	maxPeerCommand   = 4096
	socketTypeHeader = "Socket-Type"
)

var errPeer = errors.New("kvevents: peer is not a ZMTP 3 SUB socket")

// pubConn is one PUB connection to a SUB socket.
type pubConn struct {
	c    net.Conn
	done chan struct{} // closed when the peer closed the connection or a read failed
	buf  []byte
}

// dialPub connects to addr (host:port) and completes the ZMTP handshake within timeout.
func dialPub(ctx context.Context, addr string, timeout time.Duration) (*pubConn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if err := handshake(c, timeout); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("zmtp handshake with %s: %w", addr, err)
	}
	p := &pubConn{c: c, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_, _ = io.Copy(io.Discard, c) // subscriptions; ends when the connection does
	}()
	return p, nil
}

func handshake(c net.Conn, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var g [greetingLen]byte
	g[0], g[9], g[10], g[11] = 0xff, 0x7f, 3, 0 // signature, version 3.0
	copy(g[12:32], "NULL")                      // mechanism; as-server 0, filler zero
	ready := []byte{flagCommand, 0, 5, 'R', 'E', 'A', 'D', 'Y', byte(len(socketTypeHeader))}
	ready = append(ready, socketTypeHeader...)
	ready = binary.BigEndian.AppendUint32(ready, 3)
	ready = append(ready, "PUB"...)
	ready[1] = byte(len(ready) - 2)
	if _, err := c.Write(append(g[:], ready...)); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, g[:]); err != nil {
		return err
	}
	if g[0] != 0xff || g[9] != 0x7f || g[10] < 3 || strings.TrimRight(string(g[12:32]), "\x00") != "NULL" {
		return errPeer
	}
	cmd, err := readCommand(c)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(cmd), "\x05READY") || !peerIsSub(cmd[6:]) {
		return errPeer
	}
	return c.SetDeadline(time.Time{})
}

// readCommand reads one command frame of at most maxPeerCommand bytes.
func readCommand(r io.Reader) ([]byte, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return nil, err
	}
	if h[0]&flagCommand == 0 {
		return nil, errPeer
	}
	size := uint64(h[1])
	if h[0]&flagLong != 0 {
		if _, err := io.ReadFull(r, h[2:9]); err != nil {
			return nil, err
		}
		size = binary.BigEndian.Uint64(h[1:9])
	}
	if size > maxPeerCommand {
		return nil, errPeer
	}
	b := make([]byte, size)
	_, err := io.ReadFull(r, b)
	return b, err
}

// peerIsSub reads the READY command's properties for a SUB or XSUB socket type.
func peerIsSub(p []byte) bool {
	for len(p) > 0 {
		nl := int(p[0])
		if len(p) < 1+nl+4 {
			return false
		}
		key := string(p[1 : 1+nl])
		vl := int(binary.BigEndian.Uint32(p[1+nl:]))
		p = p[1+nl+4:]
		if vl > len(p) {
			return false
		}
		if strings.EqualFold(key, socketTypeHeader) {
			v := string(p[:vl])
			return v == "SUB" || v == "XSUB"
		}
		p = p[vl:]
	}
	return false
}

// send writes one message of frames within timeout.
func (p *pubConn) send(frames [][]byte, timeout time.Duration) error {
	b := p.buf[:0]
	for i, f := range frames {
		var fl byte
		if i < len(frames)-1 {
			fl = flagMore
		}
		if len(f) > 255 {
			b = binary.BigEndian.AppendUint64(append(b, fl|flagLong), uint64(len(f)))
		} else {
			b = append(b, fl, byte(len(f)))
		}
		b = append(b, f...)
	}
	p.buf = b
	if err := p.c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := p.c.Write(b)
	return err
}

func (p *pubConn) close() { _ = p.c.Close() }
