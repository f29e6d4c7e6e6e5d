package replica

import (
	"errors"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// hangBound bounds a wait that only a hang exceeds; it is no speed target.
const hangBound = 30 * time.Second

// blocked reports whether some goroutine whose stack has fn is blocked in state (the dump's
// "[chan send]", "[sync.Mutex.Lock]").
func blocked(fn, state string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "["+state) && strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

// within fails t, with every goroutine's stack, when f does not return within hangBound.
func within(t *testing.T, what string, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(hangBound):
		buf := make([]byte, 1<<20)
		t.Errorf("%s did not return within %v; goroutines:\n%s", what, hangBound, buf[:runtime.Stack(buf, true)])
		return false
	}
}

// The inner transport's accept loop blocks until its stream is taken, and its Shutdown waits for
// that loop: a Shutdown that stopped taking streams first hung whenever a peer connected as the
// pool stopped (and forever when memberlist never read them, as after a failed Create).
func TestTransportShutdownWithStreamsPending(t *testing.T) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{"127.0.0.1"}, Logger: log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := newGuardedTransport(nt, 1<<20, 10*time.Second, nil)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(nt.GetAutoBindPort()))
	// Nobody reads the guarded streams: forward holds the first, the accept loop the second.
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	poll.Until(t, hangBound, func() bool { return blocked("(*NetTransport).tcpListen", "chan send") },
		"the accept loop to wait with the second stream")
	if !within(t, "Shutdown with streams pending", func() { err = tr.Shutdown() }) {
		return
	}
	if err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for i, c := range conns { // closed by the transport, not leaked
		_ = c.SetReadDeadline(time.Now().Add(hangBound))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("stream %d still open after Shutdown", i+1)
		}
	}
	within(t, "a second Shutdown", func() { _ = tr.Shutdown() })
}

// memberlist calls the event delegate (memberUp takes s.mu) with its node lock held. A flush
// that called memberlist's Members with s.mu held took the locks in the other order: with a join
// in between, the two waited on each other forever, and Run never returned.
func TestPeerNodesWhileMemberlistNotifies(t *testing.T) {
	a, b := newTestSharer(t, "a"), newTestSharer(t, "b")
	a.mu.Lock()
	locked := true
	defer func() {
		if locked {
			a.mu.Unlock()
		}
	}()
	got := make(chan []*memberlist.Node, 1)
	go func() { got <- a.peerNodes() }()
	poll.Until(t, hangBound, func() bool { return blocked("(*Sharer).peerNodes", "sync.Mutex.Lock") },
		"peerNodes to wait for the Sharer's lock")
	go func() { _, _ = b.ml.Join([]string{a.Addr()}) }()
	poll.Until(t, hangBound, func() bool { return blocked("(*Sharer).memberUp", "sync.Mutex.Lock") },
		"memberlist's NotifyJoin to wait for the Sharer's lock, holding memberlist's")
	a.mu.Unlock()
	locked = false
	select {
	case <-got:
	case <-time.After(hangBound):
		t.Fatal("peerNodes deadlocked with memberlist's NotifyJoin")
	}
	poll.Until(t, hangBound, func() bool { return a.Peers() == 1 }, "a to see b")
}

// newTestSharer is a Sharer on loopback that is not Run; the test's cleanup closes it.
func newTestSharer(t *testing.T, name string) *Sharer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Cluster, cfg.NodeName, cfg.BindAddr, cfg.BindPort = "c1", name, "127.0.0.1", 0
	s, err := New(cfg, datastore.NewStore(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { within(t, "Close of "+name, func() { _ = s.Close() }) })
	return s
}
