package harness

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortOutsideEphemeralRangeAndDistinct(t *testing.T) {
	lo, hi := portRange()
	seen := map[string]bool{}
	for range 300 {
		addr, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		host, ps, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("FreePort() = %q, want a 127.0.0.1 address", addr)
		}
		p, _ := strconv.Atoi(ps)
		if hi != 0 && (p < lo || p >= hi) {
			t.Fatalf("port %d outside [%d, %d), the range below the kernel's ephemeral ports", p, lo, hi)
		}
		// Free on both protocols: a gossip node binds TCP and UDP on it.
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("TCP bind of a free port: %v", err)
		}
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("UDP bind of a free port: %v", err)
		}
		_ = u.Close()
		_ = l.Close()
	}
}

func TestFreePortSkipsTakenPorts(t *testing.T) {
	lo, hi := portRange()
	if hi == 0 {
		t.Skip("this machine's ephemeral range leaves no room below it; the kernel picks")
	}
	// Take a block of the range on UDP only: a port free on TCP but not UDP must not be handed out.
	var held []net.PacketConn
	taken := map[int]bool{}
	for p := lo; p < lo+200 && p < hi; p++ {
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		held = append(held, u)
		taken[p] = true
	}
	defer func() {
		for _, u := range held {
			_ = u.Close()
		}
	}()
	for range 2000 {
		addr, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		_, ps, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(ps)
		if taken[p] {
			t.Fatalf("FreePort handed out %d, which is bound on UDP", p)
		}
	}
}
