package gossip_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// An idle gateway publishes an unchanged summary (a delta of a few dozen bytes) as a heartbeat.
// In a small pool memberlist would send a broadcast only RetransmitMult·⌈log10(N+1)⌉ = 3 times
// per node, and about one receiver in twenty would miss each heartbeat. Heartbeats here come every
// 1.5 s, so that a single miss ages the summary past its 3 s TTL (while a delivery delay of up to
// 1.5 s on a loaded machine does not): no receiver may see it stale.
func TestHeartbeatDeltasKeepSummariesFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 14 s of heartbeats")
	}
	const n = 6
	p := gossiptest.Start(t, n, func(_ int, c *gossip.Config) {
		// Heartbeats every 1.5 s: a node stays fresh through two lost or late ones (a loaded,
		// race-instrumented machine delays gossip), and the 13.5 s of beats below outlive the TTL
		// more than twice, so a pool without heartbeat deltas still fails.
		c.SummaryTTL = 5 * time.Second
		// Production timings and retransmits. Push/pull (every 15 s with one random peer) stays
		// on: without it a pool may never learn all its members; it repairs a missed heartbeat
		// at most once per node during the test.
		c.Timings = gossip.DefaultLANConfig().Timings
	})
	formed(t, p)
	pub := p.Node(0)
	// A node that missed the first (full) summary gets it by asking its publisher once later
	// heartbeats arrive without their base, or by push/pull: publish until all hold one.
	poll.Until(t, 60*time.Second, func() bool {
		sent, err := pub.Publish(testSummary(20, 10, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		return hasSeq(p, pub.Name(), sent.GetSequence())
	}, "the summary to reach every node")
	var worst time.Duration
	next := time.Now()
	for beats := 0; beats < 9; {
		if time.Now().After(next) {
			if _, err := pub.Publish(testSummary(20, 10, 0, 1)); err != nil { // unchanged: a heartbeat
				t.Fatal(err)
			}
			beats++
			next = next.Add(1500 * time.Millisecond)
		}
		for i := 1; i < n; i++ {
			s := summaryOf(p.Node(i), pub.Name())
			if s == nil {
				t.Fatalf("node %d lost the summary", i)
			}
			worst = max(worst, s.Age)
			if s.Stale {
				t.Fatalf("node %d saw the idle publisher's summary stale (age %s)", i, s.Age)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("oldest summary seen: %s", worst)
}
