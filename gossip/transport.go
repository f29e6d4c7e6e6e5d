package gossip

import (
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// countingTransport wraps memberlist's UDP/TCP transport (or Config.Transport's) and counts the
// bytes it moves.
type countingTransport struct {
	inner   memberlist.NodeAwareTransport
	m       *metrics
	limits  streamLimits
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
}

var _ memberlist.NodeAwareTransport = (*countingTransport)(nil)

// newCountingTransport binds addr:port (port 0: a free port, retried as memberlist does, since
// UDP and TCP must get the same number).
func newCountingTransport(
	addr string,
	port int,
	logger *log.Logger,
	m *metrics,
	limits streamLimits,
) (*countingTransport, error) {
	cfg := &memberlist.NetTransportConfig{BindAddrs: []string{addr}, BindPort: port, Logger: logger}
	attempts := 1
	if port == 0 {
		attempts = 10
	}
	var err error
	for range attempts {
		var nt *memberlist.NetTransport
		if nt, err = memberlist.NewNetTransport(cfg); err == nil {
			return wrapTransport(nt, m, limits), nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, fmt.Errorf("gossip: bind %s:%d: %w", addr, port, err)
}

// wrapTransport counts what inner moves and bounds the streams it accepts.
func wrapTransport(inner memberlist.NodeAwareTransport, m *metrics, limits streamLimits) *countingTransport {
	t := &countingTransport{inner: inner, m: m, limits: limits, packets: make(chan *memberlist.Packet),
		streams: make(chan net.Conn), done: make(chan struct{})}
	go t.forward()
	return t
}

// forward moves received packets and accepted streams from the inner transport, counting them;
// accepted streams are bounded (streamLimits).
func (t *countingTransport) forward() {
	for {
		select {
		case p := <-t.inner.PacketCh():
			t.m.countPacket(false, len(p.Buf))
			select {
			case t.packets <- p:
			case <-t.done:
				return
			}
		case c := <-t.inner.StreamCh():
			select {
			case t.streams <- &countingConn{Conn: t.limits.guard(c, t.m), m: t.m}:
			case <-t.done:
				_ = c.Close()
				return
			}
		case <-t.done:
			return
		}
	}
}

// port returns the bound port (a supplied transport's advertised one).
func (t *countingTransport) port(advertiseAddr string, advertisePort int) int {
	if nt, ok := t.inner.(*memberlist.NetTransport); ok {
		return nt.GetAutoBindPort()
	}
	_, port, err := t.inner.FinalAdvertiseAddr(advertiseAddr, advertisePort)
	if err != nil {
		return advertisePort
	}
	return port
}

func (t *countingTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.m.countPacket(true, len(b))
	return t.inner.WriteTo(b, addr)
}

func (t *countingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	t.m.countPacket(true, len(b))
	return t.inner.WriteToAddress(b, a)
}

func (t *countingTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, m: t.m}, nil
}

func (t *countingTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialAddressTimeout(a, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, m: t.m}, nil
}

func (t *countingTransport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown stops the inner transport first: its listeners may be blocked handing over a packet,
// which forward must still drain (memberlist keeps reading until the transport is shut down).
func (t *countingTransport) Shutdown() error {
	err := t.inner.Shutdown()
	close(t.done)
	return err
}

// countingConn counts the bytes of one TCP stream.
type countingConn struct {
	net.Conn
	m *metrics
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.m.countStream(false, n)
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.m.countStream(true, n)
	return n, err
}
