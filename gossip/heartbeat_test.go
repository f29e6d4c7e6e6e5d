package gossip_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// An idle gateway publishes an unchanged summary (a delta of a few dozen bytes) as a heartbeat.
// In a small pool memberlist would send a broadcast only RetransmitMult·⌈log10(N+1)⌉ = 3 times
// per node, and about one receiver in twenty would miss each heartbeat. Heartbeats here come every
// 2 s, twice the gateway's interval, so that a single miss shows as a stale summary: no receiver
// may see one.
func TestHeartbeatDeltasKeepSummariesFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 14 s of heartbeats")
	}
	const n = 6
	p := gossiptest.Start(t, n, func(_ int, c *gossip.Config) {
		c.SummaryTTL = 3 * time.Second
		c.Timings = gossip.DefaultLANConfig().Timings // production timings and retransmits
		c.Timings.PushPullInterval = time.Hour        // only broadcasts carry the heartbeats
	})
	formed(t, p)
	pub := p.Node(0)
	sent, err := pub.Publish(testSummary(20, 10, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	gossiptest.Eventually(t, 30*time.Second, func() bool { return hasSeq(p, pub.Name(), sent.GetSequence()) },
		"first summary never reached every node")
	var worst time.Duration
	next := time.Now()
	for beats := 0; beats < 7; {
		if time.Now().After(next) {
			if _, err := pub.Publish(testSummary(20, 10, 0, 1)); err != nil { // unchanged: a heartbeat
				t.Fatal(err)
			}
			beats++
			next = next.Add(2 * time.Second)
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
