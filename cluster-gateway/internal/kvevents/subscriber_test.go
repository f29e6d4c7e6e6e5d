package kvevents

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

const (
	podA    = "127.0.0.1:18001"
	podB    = "127.0.0.1:18002"
	waitFor = 10 * time.Second
)

type harness struct {
	sub *Subscriber
	idx *Index
	h   *plugintest.Handle
	m   *metrics
}

func startSubscriber(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Endpoint = "tcp://127.0.0.1:0"
	cfg.ResolveEvery = time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	h := plugintest.NewHandle(plugintest.Endpoints(plugintest.NewEndpoint(podA), plugintest.NewEndpoint(podB))...)
	idx := NewIndex(cfg.MaxIndexBytes)
	sub, err := New(cfg, idx, h, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &harness{sub: sub, idx: idx, h: h, m: sub.m}
}

// publisher is a PUB socket connected to the subscriber, as a vLLM pod's.
type publisher struct {
	sock zmq4.Socket
	seq  uint64
}

func newPublisher(t *testing.T, addr string) *publisher {
	t.Helper()
	p := zmq4.NewPub(context.Background())
	if err := p.Dial("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &publisher{sock: p}
}

func (p *publisher) send(t *testing.T, topic string, payload []byte) {
	t.Helper()
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], p.seq)
	p.seq++
	if err := p.sock.SendMulti(zmq4.NewMsgFrom([]byte(topic), seq[:], payload)); err != nil {
		t.Fatal(err)
	}
}

// sendUntil repeats sends (new sequence numbers each) until cond holds: a PUB drops messages
// until the SUB's subscription has reached it.
func (p *publisher) sendUntil(t *testing.T, topic string, payload []byte, cond func() bool, what string) {
	t.Helper()
	poll.Until(t, waitFor, func() bool {
		p.send(t, topic, payload)
		return cond()
	}, what)
}

func TestSubscriberAppliesEvents(t *testing.T) {
	s := startSubscriber(t, nil)
	pub := newPublisher(t, s.sub.Addr())
	pub.sendUntil(t, "kv@"+podA+"@llama", encodeBatch(t, int64(0), stored(1, 2, 3)),
		func() bool { return s.idx.PodEntries(podA) == 3 }, "pod A's blocks indexed")
	before := testutil.ToFloat64(s.m.events.WithLabelValues(podA, tagStored))
	pub.send(t, "kv@"+podA+"@llama", encodeBatch(t, int64(0), removed(3), ev{tag: "Future"}))
	poll.Until(t, waitFor, func() bool { return s.idx.PodEntries(podA) == 2 }, "block removed")
	if got := testutil.ToFloat64(s.m.events.WithLabelValues(podA, "unknown")); got != 1 {
		t.Errorf("unknown events = %v, want 1", got)
	}
	if before < 1 {
		t.Errorf("stored events counter = %v", before)
	}
	if got := testutil.ToFloat64(s.m.gaps.WithLabelValues(podA)); got != 0 {
		t.Errorf("gaps = %v on a stream without gaps", got)
	}
	s.h.Remove(podA)
	if n := s.idx.PodEntries(podA); n != 0 {
		t.Errorf("removed pod keeps %d entries", n)
	}
}

func TestSubscriberRefusesUnknownPodsAndTopics(t *testing.T) {
	s := startSubscriber(t, nil)
	pub := newPublisher(t, s.sub.Addr())
	unknown := s.m.messages.WithLabelValues(resultUnknownPod)
	pub.sendUntil(t, "kv@10.9.9.9@llama", encodeBatch(t, nil, stored(1)),
		func() bool { return testutil.ToFloat64(unknown) > 0 }, "unknown pod counted")
	// 127.0.0.1 alone is ambiguous: two endpoints share it.
	pub.send(t, "kv@127.0.0.1@llama", encodeBatch(t, nil, stored(1)))
	pub.send(t, "kv@@llama", encodeBatch(t, nil, stored(1)))
	pub.send(t, "kv@"+podB+"@llama", []byte{0xc1, 0xc1})
	bad := s.m.messages.WithLabelValues(resultMalformed)
	poll.Until(t, waitFor, func() bool { return testutil.ToFloat64(bad) == 1 }, "malformed payload counted")
	if st := s.idx.Stats(); st.Entries != 0 {
		t.Errorf("index holds %d entries from refused messages", st.Entries)
	}
	if got := testutil.ToFloat64(s.m.messages.WithLabelValues(resultBadTopic)); got != 1 {
		t.Errorf("bad topics = %v, want 1", got)
	}
}

func TestSubscriberSequenceGapClearsPod(t *testing.T) {
	s := startSubscriber(t, nil)
	pub := newPublisher(t, s.sub.Addr())
	pub.sendUntil(t, "kv@"+podB+"@m", encodeBatch(t, int64(0), stored(1, 2)),
		func() bool { return s.idx.PodEntries(podB) >= 2 }, "pod B indexed")
	pub.seq += 5 // five messages lost
	pub.send(t, "kv@"+podB+"@m", encodeBatch(t, int64(0), stored(9)))
	poll.Until(t, waitFor, func() bool { return testutil.ToFloat64(s.m.gaps.WithLabelValues(podB)) == 1 }, "gap counted")
	poll.Until(t, waitFor, func() bool { return s.idx.PodEntries(podB) == 1 }, "entries before the gap cleared")
	// Another data-parallel rank keeps its own sequence: no gap.
	pub.send(t, "kv@"+podB+"@m", encodeBatch(t, int64(1), stored(10)))
	poll.Until(t, waitFor, func() bool { return s.idx.PodEntries(podB) == 2 }, "rank 1 applied")
	if got := testutil.ToFloat64(s.m.gaps.WithLabelValues(podB)); got != 1 {
		t.Errorf("gaps = %v, want 1", got)
	}
}

// zmtpGreeting is a ZMTP 3.0 greeting with the NULL mechanism.
func zmtpGreeting() []byte {
	g := make([]byte, greetingLen)
	g[0], g[9], g[10] = 0xff, 0x7f, 3
	copy(g[12:], "NULL")
	return g
}

func readyCommand(socketType string) []byte {
	body := []byte("\x05READY\x0bSocket-Type")
	body = binary.BigEndian.AppendUint32(body, uint32(len(socketType)))
	body = append(body, socketType...)
	return append([]byte{flagCommand, byte(len(body))}, body...)
}

func TestGuardClosesHostileConnections(t *testing.T) {
	huge := append([]byte{flagLong}, binary.BigEndian.AppendUint64(nil, 1<<62)...)
	tooMany := []byte{}
	for range 9 {
		tooMany = append(tooMany, flagMore, 1, 'x')
	}
	tests := []struct {
		name   string
		send   []byte
		reason string
	}{
		{"huge frame", append(append(zmtpGreeting(), readyCommand("PUB")...), huge...), refusedFrame},
		{"huge handshake command", append(zmtpGreeting(), flagLong|flagCommand, 0, 0, 1, 0, 0, 0, 0, 0), refusedFrame},
		{"endless frames", append(append(zmtpGreeting(), readyCommand("PUB")...), tooMany...), refusedFrames},
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + string(make([]byte, 64))), refusedPeer},
		{"wrong socket type", append(zmtpGreeting(), readyCommand("REQ")...), refusedPeer},
		{"reserved flags", append(append(zmtpGreeting(), readyCommand("PUB")...), 0x80, 1, 'x'), refusedFraming},
	}
	s := startSubscriber(t, func(c *Config) { c.MaxMessageBytes = 1 << 16 })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := s.m.refused.WithLabelValues(tc.reason)
			before := testutil.ToFloat64(c)
			conn, err := net.Dial("tcp", s.sub.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, _ = conn.Write(tc.send)
			_ = conn.SetReadDeadline(time.Now().Add(waitFor))
			buf := make([]byte, 512)
			for { // the gateway's greeting and READY, then the close
				if _, err := conn.Read(buf); err != nil {
					break
				}
			}
			poll.Until(t, waitFor, func() bool { return testutil.ToFloat64(c) > before }, tc.reason+" counted")
		})
	}
	// A well-behaved publisher is still served.
	pub := newPublisher(t, s.sub.Addr())
	pub.sendUntil(t, "kv@"+podA+"@m", encodeBatch(t, nil, stored(5)),
		func() bool { return s.idx.PodEntries(podA) == 1 }, "publisher served after hostile ones")
	if n := s.sub.Addr(); n == "" {
		t.Fatal("no address")
	}
}

func TestGuardHandshakeTimeoutAndConnectionLimit(t *testing.T) {
	s := startSubscriber(t, func(c *Config) { c.HandshakeTimeout = 200 * time.Millisecond; c.MaxConnections = 2 })
	silent, err := net.Dial("tcp", s.sub.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	timeouts := s.m.refused.WithLabelValues(refusedHandshake)
	poll.Until(t, waitFor, func() bool { return testutil.ToFloat64(timeouts) == 1 }, "silent peer timed out")
	// The silent peer no longer holds the accept loop: a publisher gets through.
	pub := newPublisher(t, s.sub.Addr())
	pub.sendUntil(t, "kv@"+podA+"@m", encodeBatch(t, nil, stored(5)),
		func() bool { return s.idx.PodEntries(podA) == 1 }, "publisher served after a silent peer")
	// Two connections are open (the publisher and one more); a third is refused.
	held, err := net.Dial("tcp", s.sub.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, _ = held.Write(zmtpGreeting())
	refused := s.m.refused.WithLabelValues(refusedConnections)
	poll.Until(t, waitFor, func() bool {
		c, err := net.Dial("tcp", s.sub.Addr())
		if err == nil {
			_ = c.Close()
		}
		return testutil.ToFloat64(refused) >= 1
	}, "connection past the limit refused")
}
