package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// simNet is an in-memory network for memberlist (gossip.Config.Transport): every node gets an
// address 10.a.b.c:7946 and no socket. A datagram is delivered after the link's one-way latency,
// or lost with probability loss, or dropped when the receiver's queue is full (a full socket
// buffer); a stream is a pair of in-memory connections set up after one round trip. The network
// counts the bytes of every datagram and stream, delivered or not.
type simNet struct {
	latency, jitter time.Duration // one way
	loss            float64

	mu    sync.RWMutex
	nodes map[string]*simEndpoint // by address
	next  int
	rngMu sync.Mutex
	rng   *rand.Rand

	packetBytes, streamBytes atomic.Uint64
	lost, overflowed         atomic.Uint64 // datagrams
}

// simQueue is how many datagrams wait for a node's memberlist before more are dropped.
const simQueue = 4096

func newSimNet(latency, jitter time.Duration, loss float64, seed uint64) *simNet {
	return &simNet{latency: latency, jitter: jitter, loss: loss, nodes: map[string]*simEndpoint{},
		rng: rand.New(rand.NewPCG(seed, 41))}
}

// transport returns a new node's transport (gossip.Config.Transport).
func (n *simNet) transport() (memberlist.NodeAwareTransport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	if n.next >= 1<<24 {
		return nil, errors.New("scale: simulated network: out of addresses")
	}
	ip := net.IPv4(10, byte(n.next>>16), byte(n.next>>8), byte(n.next))
	e := &simEndpoint{net: n, ip: ip, port: 7946, packets: make(chan *memberlist.Packet, simQueue),
		streams: make(chan net.Conn), done: make(chan struct{})}
	e.addr = net.JoinHostPort(ip.String(), "7946")
	n.nodes[e.addr] = e
	return e, nil
}

// delay returns one datagram's one-way latency, or false when it is lost.
func (n *simNet) delay() (time.Duration, bool) {
	n.rngMu.Lock()
	defer n.rngMu.Unlock()
	if n.loss > 0 && n.rng.Float64() < n.loss {
		return 0, false
	}
	d := n.latency
	if n.jitter > 0 {
		d += time.Duration(n.rng.Int64N(int64(n.jitter)))
	}
	return d, true
}

func (n *simNet) endpoint(addr string) *simEndpoint {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.nodes[addr]
}

// simEndpoint is one node's transport on a simNet.
type simEndpoint struct {
	net     *simNet
	ip      net.IP
	port    int
	addr    string
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

var _ memberlist.NodeAwareTransport = (*simEndpoint)(nil)

func (e *simEndpoint) FinalAdvertiseAddr(string, int) (net.IP, int, error) { return e.ip, e.port, nil }

func (e *simEndpoint) WriteTo(b []byte, addr string) (time.Time, error) {
	now := time.Now()
	e.net.packetBytes.Add(uint64(len(b)))
	dst := e.net.endpoint(addr)
	d, ok := e.net.delay()
	if dst == nil || !ok {
		e.net.lost.Add(1)
		return now, nil // a datagram to nowhere is sent all the same
	}
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: e.udpAddr()}
	time.AfterFunc(d, func() {
		p.Timestamp = time.Now()
		select {
		case dst.packets <- p:
		case <-dst.done:
		default:
			e.net.overflowed.Add(1)
		}
	})
	return now, nil
}

func (e *simEndpoint) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return e.WriteTo(b, a.Addr)
}

func (e *simEndpoint) PacketCh() <-chan *memberlist.Packet { return e.packets }

func (e *simEndpoint) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	dst := e.net.endpoint(addr)
	if dst == nil {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	time.Sleep(2 * e.net.latency) // the handshake's round trip
	local, remote := net.Pipe()
	mine := &simConn{Conn: local, net: e.net, local: e.tcpAddr(), remote: dst.tcpAddr()}
	theirs := &simConn{Conn: remote, net: e.net, local: dst.tcpAddr(), remote: e.tcpAddr()}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case dst.streams <- theirs:
		return mine, nil
	case <-dst.done:
	case <-t.C:
	}
	_ = local.Close()
	_ = remote.Close()
	return nil, fmt.Errorf("dial %s: timed out", addr)
}

func (e *simEndpoint) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return e.DialTimeout(a.Addr, timeout)
}

func (e *simEndpoint) StreamCh() <-chan net.Conn { return e.streams }

func (e *simEndpoint) Shutdown() error {
	e.once.Do(func() {
		e.net.mu.Lock()
		delete(e.net.nodes, e.addr)
		e.net.mu.Unlock()
		close(e.done)
	})
	return nil
}

func (e *simEndpoint) udpAddr() net.Addr { return &net.UDPAddr{IP: e.ip, Port: e.port} }
func (e *simEndpoint) tcpAddr() net.Addr { return &net.TCPAddr{IP: e.ip, Port: e.port} }

// simConn is one end of a simulated stream: the nodes' addresses, and the bytes it writes
// counted on the network.
type simConn struct {
	net.Conn
	net           *simNet
	local, remote net.Addr
}

func (c *simConn) LocalAddr() net.Addr  { return c.local }
func (c *simConn) RemoteAddr() net.Addr { return c.remote }

func (c *simConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.net.streamBytes.Add(uint64(n))
	return n, err
}
