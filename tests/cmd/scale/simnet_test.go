package main

import (
	"io"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// The simulated network delivers a datagram after its latency, loses the share it is told to,
// counts every byte, and carries streams between two nodes.
func TestSimNet(t *testing.T) {
	cases := []struct {
		name     string
		loss     float64
		wantLost bool
	}{
		{"delivered", 0, false},
		{"lost", 1 - 1e-9, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newSimNet(20*time.Millisecond, 0, c.loss, 1)
			a, _ := n.transport()
			b, _ := n.transport()
			bAddr, bPort, _ := b.FinalAdvertiseAddr("", 0)
			to := bAddr.String() + ":7946"
			if bPort != 7946 {
				t.Fatalf("port %d", bPort)
			}
			sent, err := a.WriteTo([]byte("ping"), to)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case p := <-b.PacketCh():
				if c.wantLost {
					t.Fatal("a lost datagram arrived")
				}
				if string(p.Buf) != "ping" || p.Timestamp.Sub(sent) < 20*time.Millisecond {
					t.Errorf("got %q after %v, want ping after the 20 ms latency", p.Buf, p.Timestamp.Sub(sent))
				}
			case <-time.After(time.Second):
				if !c.wantLost {
					t.Fatal("the datagram never arrived")
				}
				if n.lost.Load() != 1 {
					t.Errorf("%d datagrams counted lost, want 1", n.lost.Load())
				}
			}
			if n.packetBytes.Load() != 4 {
				t.Errorf("%d datagram bytes counted, want 4", n.packetBytes.Load())
			}
		})
	}

	n := newSimNet(time.Millisecond, 0, 0, 2)
	a, _ := n.transport()
	b, _ := n.transport()
	ip, _, _ := b.FinalAdvertiseAddr("", 0)
	go func() {
		c := <-b.StreamCh()
		_, _ = io.Copy(c, c) // echo
	}()
	conn, err := a.DialTimeout(ip.String()+":7946", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("state")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "state" {
		t.Fatalf("stream read %q, %v", buf, err)
	}
	// The echo's write is counted once it returns, just after this side has read it.
	poll.Until(t, 5*time.Second, func() bool { return n.streamBytes.Load() == 10 },
		"the stream's bytes (10, both ways) are not counted")
	if _, err := a.DialTimeout("10.9.9.9:7946", time.Second); err == nil {
		t.Error("a dial to no node succeeded")
	}
	_ = conn.Close()
	_ = b.Shutdown()
	if _, err := a.DialTimeout(ip.String()+":7946", time.Second); err == nil {
		t.Error("a dial to a node that shut down succeeded")
	}
}
