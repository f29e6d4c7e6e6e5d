package replica_test

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/replica"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// pods are the two endpoints every replica in these tests knows, serving model "m".
var pods = []string{"10.0.0.1:8000", "10.0.0.2:8000"}

func newStore() *datastore.Store {
	s := datastore.NewStore(nil, nil)
	var specs []datastore.EndpointSpec
	for _, a := range pods {
		specs = append(specs, datastore.EndpointSpec{Address: a})
	}
	s.Sync(specs)
	for _, ep := range s.Endpoints() {
		ep.SetModels(&datastore.Models{Base: "m"})
	}
	return s
}

type replicaNode struct {
	store  *datastore.Store
	sharer *replica.Sharer
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned, with err
	err    error
}

func (n *replicaNode) stop(t *testing.T) {
	t.Helper()
	n.cancel()
	if n.wait(t) && n.err != nil {
		t.Errorf("Run: %v", n.err)
	}
}

// runReturnBound bounds how long Run may take to return after cancel (a leave of at most 1 s
// and a shutdown); only a hang exceeds it.
const runReturnBound = 30 * time.Second

// wait waits for Run to return after cancel, and fails t with every goroutine's stack if it does
// not within runReturnBound: a test fails, it never hangs.
func (n *replicaNode) wait(t *testing.T) bool {
	t.Helper()
	select {
	case <-n.done:
		return true
	case <-time.After(runReturnBound):
		buf := make([]byte, 1<<20)
		t.Errorf("Run did not return within %v of cancel; goroutines:\n%s", runReturnBound,
			buf[:runtime.Stack(buf, true)])
		return false
	}
}

// startReplica starts a Sharer for cluster on loopback, joining seeds.
func startReplica(t *testing.T, cluster, name string, keys [][]byte, seeds ...string) *replicaNode {
	t.Helper()
	n := &replicaNode{store: newStore(), reg: prometheus.NewRegistry(), done: make(chan struct{})}
	cfg := replica.DefaultConfig()
	cfg.Cluster, cfg.NodeName, cfg.BindAddr, cfg.BindPort = cluster, name, "127.0.0.1", 0
	cfg.Seeds, cfg.Keys, cfg.Registerer = seeds, keys, n.reg
	cfg.Interval, cfg.RejoinInterval = 20*time.Millisecond, 200*time.Millisecond
	s, err := replica.New(cfg, n.store)
	if err != nil {
		t.Fatal(err)
	}
	n.sharer = s
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		n.err = s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		n.wait(t)
	})
	return n
}

func key(t *testing.T) [][]byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return [][]byte{k}
}

func TestLoadIsShared(t *testing.T) {
	keys := key(t)
	a := startReplica(t, "c1", "a", keys)
	b := startReplica(t, "c1", "b", keys, a.sharer.Addr())
	poll.Until(t, 10*time.Second, func() bool { return a.sharer.Peers() == 1 && b.sharer.Peers() == 1 },
		"the replicas see each other")

	epA, epB := a.store.Get(pods[0]), b.store.Get(pods[0])
	epA.AddInFlight(3)
	epA.AddPrefill(2, 1200)
	poll.Until(t, 10*time.Second, func() bool { return epB.InFlight() == 3 }, "b counts a's 3 in-flight requests")
	want := framework.InFlightLoad{Requests: 3, Prefilling: 2, PrefillTokens: 1200}
	poll.Until(t, 10*time.Second, func() bool { return epB.PeerInFlight() == want }, "b holds a's figures")
	if own := epB.OwnInFlight(); own != (framework.InFlightLoad{}) {
		t.Fatalf("b's own in-flight %+v, want none", own)
	}
	epB.AddInFlight(2)
	poll.Until(t, 10*time.Second, func() bool { return epA.InFlight() == 5 && epB.InFlight() == 5 },
		"both replicas count 5")
	epA.AddInFlight(-3)
	epA.AddPrefill(-2, -1200)
	poll.Until(t, 10*time.Second, func() bool { return epB.InFlight() == 2 }, "a's finished requests leave b's count")

	// A peer that leaves is forgotten at once, not after MaxAge.
	epA.AddInFlight(4)
	poll.Until(t, 10*time.Second, func() bool { return epB.InFlight() == 6 }, "b counts a's 4")
	a.stop(t)
	poll.Until(t, 10*time.Second, func() bool { return epB.InFlight() == 2 && b.sharer.Peers() == 0 },
		"b forgets the departed a")
}

func TestLoadAgesOut(t *testing.T) {
	a := startReplica(t, "c1", "a", nil)
	b := startReplica(t, "c1", "b", nil, a.sharer.Addr())
	poll.Until(t, 10*time.Second, func() bool { return b.sharer.Peers() == 1 }, "b sees a")
	a.store.Get(pods[1]).AddInFlight(7)
	epB := b.store.Get(pods[1])
	poll.Until(t, 10*time.Second, func() bool { return epB.InFlight() == 7 }, "b counts a's 7")
	// The pod leaves a's store: a stops reporting it, and b's copy must age out (MaxAge 1 s).
	a.store.Sync([]datastore.EndpointSpec{{Address: pods[0]}})
	poll.Until(t, 10*time.Second, func() bool { return epB.InFlight() == 0 }, "a's figure ages out at b")
}

func TestPrefixRoutesAreShared(t *testing.T) {
	keys := key(t)
	a := startReplica(t, "c1", "a", keys)
	b := startReplica(t, "c1", "b", keys, a.sharer.Addr())
	poll.Until(t, 10*time.Second, func() bool { return b.sharer.Peers() == 1 && a.sharer.Peers() == 1 },
		"the replicas see each other")
	var mu sync.Mutex
	got := map[string][]uint64{}
	var models []string
	b.sharer.OnPeerPrefix(func(e framework.Endpoint, hashes []uint64) {
		mu.Lock()
		defer mu.Unlock()
		got[e.Meta().Address] = append(got[e.Meta().Address], hashes...)
	})
	b.sharer.OnPeerModelPrefix(func(model string, _ []uint64) {
		mu.Lock()
		defer mu.Unlock()
		models = append(models, model)
	})
	long := make([]uint64, 600) // several packets
	for i := range long {
		long[i] = uint64(1000 + i)
	}
	a.sharer.Routed("m", pods[1], long)
	a.sharer.Routed("other-model", pods[0], []uint64{5}) // the pod does not serve it: ignored
	a.sharer.Routed("m", "10.9.9.9:1", []uint64{6})      // a pod b does not know: ignored
	poll.Until(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got[pods[1]]) == len(long)
	}, "b learns a's route")
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got[pods[1]]) // packets may arrive in any order
	if !slices.Equal(got[pods[1]], long) || len(got) != 1 {
		t.Fatalf("b learned %v, want only %d hashes on %s", got, len(long), pods[1])
	}
	if slices.ContainsFunc(models, func(m string) bool { return m != "m" }) {
		t.Fatalf("models %v, want only m", models)
	}
	poll.Until(t, 5*time.Second, func() bool {
		return testutil.ToFloat64(counter(t, b.reg, "switchyard_gateway_replica_entries_ignored_total")) >= 2
	}, "the two bad routes are counted")
}

func TestOtherClusterAndKeysAreKeptOut(t *testing.T) {
	keys := key(t)
	a := startReplica(t, "c1", "a", keys)
	other := startReplica(t, "c2", "x", keys, a.sharer.Addr()) // same key, another cluster
	stranger := startReplica(t, "c1", "s", key(t), a.sharer.Addr())
	other.store.Get(pods[0]).AddInFlight(9)
	stranger.store.Get(pods[0]).AddInFlight(9)
	time.Sleep(500 * time.Millisecond) // many intervals: nothing may arrive
	if n := a.store.Get(pods[0]).InFlight(); n != 0 || a.sharer.Peers() != 0 {
		t.Fatalf("a counts %d in flight with %d peers; want 0 and 0", n, a.sharer.Peers())
	}
}

// counter finds a metric of reg by name.
func counter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	return gathered{reg: reg, name: name}
}

type gathered struct {
	reg  *prometheus.Registry
	name string
}

func (g gathered) Describe(chan<- *prometheus.Desc) {}

func (g gathered) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := g.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == g.name {
			var v float64
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(g.name, "", nil, nil), prometheus.CounterValue, v)
		}
	}
}

// A stranger without the key cannot make a replica buffer a large pre-authentication TCP
// stream: one that declares 16 MiB is cut after its 5-byte header, and counted.
func TestLargePreAuthStreamIsCut(t *testing.T) {
	a := startReplica(t, "c1", "a", key(t))
	conn, err := net.Dial("tcp", a.sharer.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	header := []byte{10, 0x01, 0x00, 0x00, 0x00} // memberlist's encryptMsg, 16 MiB declared
	if _, err := conn.Write(header); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() bool {
		return testutil.ToFloat64(counter(t, a.reg, "switchyard_gateway_replica_streams_cut_total")) == 1
	}, "the stream is cut")
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	junk := make([]byte, 64<<10)
	for range 256 { // the replica closed the stream: writes fail long before 16 MiB
		if _, err := conn.Write(junk); err != nil {
			return
		}
	}
	t.Fatal("16 MiB written to a cut stream")
}

// A seed that accepts the join's stream and never answers holds memberlist's join for its TCP
// timeout (10 s) per seed. Run must still return promptly on cancel, or a gateway whose seeds
// hang would not stop on SIGTERM: the join's stream is cut.
func TestRunReturnsWhileJoinWaitsOnSilentSeeds(t *testing.T) {
	accepted := make(chan net.Conn, 16)
	var seeds []string
	for range 4 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c // held open, never answered
			}
		}()
		seeds = append(seeds, ln.Addr().String())
	}
	t.Cleanup(func() {
		for {
			select {
			case c := <-accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	n := startReplica(t, "c1", "a", nil, seeds...)
	var first net.Conn
	select {
	case first = <-accepted:
		accepted <- first // closed by the cleanup
	case <-time.After(runReturnBound):
		t.Fatal("the replica never dialled its seed")
	}
	n.cancel()
	// Unfixed, the join waits out 10 s per seed: 30 s or more for the three still to come.
	const bound = 15 * time.Second
	select {
	case <-n.done:
	case <-time.After(bound):
		t.Fatalf("Run still running %v after cancel: the join on silent seeds holds it", bound)
	}
	if n.err != nil {
		t.Fatalf("Run: %v", n.err)
	}
	_ = first.SetReadDeadline(time.Now().Add(runReturnBound))
	if _, err := io.Copy(io.Discard, first); err != nil { // the replica closed the join's stream
		t.Fatalf("the join's stream at the seed: %v", err)
	}
}
