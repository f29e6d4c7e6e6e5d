package gossip

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// runNode starts a gateway node on loopback, joined to seed when it is not empty, and stops it
// when the test ends.
func runNode(t *testing.T, name, seed string) *Node {
	t.Helper()
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Cluster, cfg.Region, cfg.AdvertiseURL = name, RoleGateway, "c-"+name, "r1", "http://"+name+":8080"
	cfg.BindAddr, cfg.BindPort, cfg.Insecure, cfg.SummaryTTL = "127.0.0.1", 0, true, time.Minute
	cfg.Timings.GossipInterval, cfg.Timings.ProbeInterval, cfg.Timings.ProbeTimeout = 50*time.Millisecond, 2*time.Second, 1500*time.Millisecond
	cfg.Timings.PushPullInterval = time.Hour // only broadcasts and full-summary requests may repair
	if seed != "" {
		cfg.Seeds = []string{seed}
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node %s: %v", name, err)
		}
	})
	select {
	case <-n.Ready():
	case err := <-done:
		t.Fatalf("node %s stopped: %v", name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s did not start", name)
	}
	return n
}

// A receiver that lost the base (here: forgot the publisher) parks the publisher's deltas, asks
// the publisher directly for a full summary once the base is overdue, and holds the exact summary
// after the publisher's next publication, with push/pull switched off.
func TestReceiverWithoutBaseAsksForFull(t *testing.T) {
	pub := runNode(t, "pub", "")
	recv := runNode(t, "recv", pub.Addr())
	poll.Until(
		t,
		30*time.Second,
		func() bool { return len(pub.Members()) == 2 && len(recv.Members()) == 2 },
		"the pool to form",
	)
	holds := func(sent *gossipv1.CapacitySummary) func() bool {
		return func() bool {
			e, ok := recv.store.entriesCopy()[pub.Name()]
			return ok && proto.Equal(e.summary, sent)
		}
	}
	publish := func(load uint32) *gossipv1.CapacitySummary {
		s := deltaBase(1, 5, 3)
		s.Node, s.Sequence, s.GeneratedAtUnixNano = "", 0, 0
		s.Models[load%5].QueueDepth = load
		sent, err := pub.Publish(s)
		if err != nil {
			t.Fatal(err)
		}
		return sent
	}
	poll.Until(t, 30*time.Second, holds(publish(1)), "the full summary to arrive")
	poll.Until(t, 30*time.Second, func() bool { return pub.queue.NumQueued() == 0 }, "the full summary to leave the queue")

	recv.store.mu.Lock()
	delete(recv.store.entries, pub.Name()) // the receiver loses the base
	recv.store.mu.Unlock()
	// Keep publishing: the receiver parks the deltas, asks for a full summary once their base is
	// overdue (baseGrace after it), and the publisher answers with its next publication.
	first := pub.pub.base
	lost := time.Now()
	sent := []*gossipv1.CapacitySummary{first}
	published := func(s *gossipv1.CapacitySummary) bool {
		for _, p := range sent {
			if proto.Equal(s, p) {
				return true
			}
		}
		return false
	}
	var last *gossipv1.CapacitySummary
	poll.Until(t, 30*time.Second, func() bool {
		// The full summary itself may come back (a late relay of its chunks), and the parked
		// delta then applies on top of it: whatever the receiver holds must be a summary the
		// publisher published. A delta applied without its base would be none of them. A
		// receiver that got its base back that way loses it again, so that the test still
		// sees it ask for a full summary.
		if e, ok := recv.store.entriesCopy()[pub.Name()]; ok && pub.pub.base == first {
			if !published(e.summary) {
				t.Fatal("a delta without its base was applied")
			}
			recv.store.mu.Lock()
			delete(recv.store.entries, pub.Name())
			recv.store.mu.Unlock()
		}
		last = publish(2)
		sent = append(sent, last)
		return pub.pub.base != first
	}, "the publisher to send a full summary")
	if got := testutil.ToFloat64(recv.metrics.deltas.WithLabelValues("full_requested")); got < 1 {
		t.Errorf("receiver asked for %v full summaries, want at least 1", got)
	}
	poll.Until(t, 30*time.Second, holds(last), "the receiver to get the full summary")
	t.Logf(
		"receiver held the publisher's summary again %v after losing its base",
		time.Since(lost).Round(time.Millisecond),
	)
	poll.Until(t, 30*time.Second, holds(publish(4)), "the receiver to apply the next delta")
}
