package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports handed to a child process are picked below the kernel's ephemeral range: a port the
// kernel gave to a listener on :0 and took back is the very kind it hands next as the source port
// of an outgoing connection, so between the pick and the child's bind any process on the machine
// could take it. Below the range only another explicit bind can, and the pick is random over
// thousands of ports, checked free on TCP and UDP (gossip binds both), and never handed out twice
// by this process.
const (
	lowestPort     = 15000
	minPickedRange = 2000
)

var ports struct {
	once   sync.Once
	lo, hi int // [lo, hi) is the range picked from; hi == 0 means "ask the kernel"
	mu     sync.Mutex
	handed map[int]bool
}

func portRange() (lo, hi int) {
	ports.once.Do(func() {
		ports.handed = map[int]bool{}
		ephemeral := 32768 // Linux's default start of net.ipv4.ip_local_port_range
		if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
			if f := strings.Fields(string(b)); len(f) == 2 {
				if v, err := strconv.Atoi(f[0]); err == nil {
					ephemeral = v
				}
			}
		}
		if ephemeral-lowestPort >= minPickedRange {
			ports.lo, ports.hi = lowestPort, ephemeral
		}
	})
	return ports.lo, ports.hi
}

// FreePort returns a loopback address ("127.0.0.1:port") whose port is free on TCP and UDP now
// and unlikely to be taken before the caller's child binds it (see above).
func FreePort() (string, error) {
	lo, hi := portRange()
	if hi == 0 {
		return kernelPort()
	}
	ports.mu.Lock()
	defer ports.mu.Unlock()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if ports.handed[p] || !bindable(p) {
			continue
		}
		ports.handed[p] = true
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
	}
	return "", fmt.Errorf("harness: no free loopback port in [%d, %d) after 200 tries", lo, hi)
}

// bindable reports whether port can be bound on loopback for TCP and for UDP.
func bindable(port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	_ = u.Close()
	return true
}

// kernelPort lets the kernel pick, for machines whose ephemeral range leaves no room below it.
func kernelPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
