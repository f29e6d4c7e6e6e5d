package gossip_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// summaryOf returns the newest summary node holds from publisher, or nil.
func summaryOf(n *gossip.Node, publisher string) *gossip.Summary {
	for _, s := range n.Snapshot() {
		if s.Node == publisher {
			return &s
		}
	}
	return nil
}

// hasSeq reports whether every node except the publisher holds publisher's summary seq.
func hasSeq(p *gossiptest.Pool, publisher string, seq uint64) bool {
	for i := 0; i < p.Len(); i++ {
		n := p.Node(i)
		if n.Name() == publisher {
			continue
		}
		s := summaryOf(n, publisher)
		if s == nil || s.Summary.GetSequence() != seq {
			return false
		}
	}
	return true
}

func nodes(p *gossiptest.Pool) []*gossip.Node {
	out := make([]*gossip.Node, p.Len())
	for i := range out {
		out[i] = p.Node(i)
	}
	return out
}

func TestConvergence(t *testing.T) {
	sizes := []struct {
		name  string
		nodes int
	}{
		{"3 nodes", 3},
		{"10 nodes", 10},
		{"50 nodes", 50},
	}
	for _, tt := range sizes {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && tt.nodes > 10 {
				t.Skip("short")
			}
			p := gossiptest.Start(t, tt.nodes, func(_ int, c *gossip.Config) {
				c.SummaryTTL = time.Minute // staleness has its own test; a busy machine may be slow here
				if tt.nodes > 10 {
					c.Timings = gossiptest.RelaxedTimings()
				}
			})
			all := nodes(p)
			start := time.Now()
			defer func() { t.Logf("converged in %v", time.Since(start)) }()
			// Generous bounds: 50 encrypted nodes in one process under the race detector on a
			// shared 2-core machine converge in well under a minute, but CPU starvation stretches it.
			poll.Until(t, 3*time.Minute, func() bool { return gossiptest.AllMembersAlive(all, tt.nodes) },
				fmt.Sprintf("%d nodes all alive", tt.nodes))
			t.Logf("members alive after %v", time.Since(start))
			publishers := []int{0, tt.nodes / 2, tt.nodes - 1}
			var want []uint64
			for _, i := range publishers {
				sent, err := p.Node(i).Publish(testSummary(5, 3, 0, uint32(i)))
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, sent.GetSequence())
			}
			for k, i := range publishers {
				name := p.Node(i).Name()
				poll.Until(t, time.Minute, func() bool { return hasSeq(p, name, want[k]) },
					"the summary of "+name+" to reach every node")
			}
			got := summaryOf(p.Node(1), p.Node(publishers[2]).Name())
			if got.Stale || got.Cluster != gossiptest.Config(publishers[2]).Cluster || got.Summary.GetGatewayUrl() == "" {
				t.Errorf("summary seen by node 1: %+v", got)
			}
		})
	}
}

func TestOversizeSummaryRoundTrips(t *testing.T) {
	p := gossiptest.Start(t, 3, nil)
	poll.Until(t, 20*time.Second, func() bool { return gossiptest.AllMembersAlive(nodes(p), 3) }, "the pool to form")
	big := testSummary(50, 20, 4096, 7)
	sent, err := p.Node(0).Publish(big)
	if err != nil {
		t.Fatal(err)
	}
	blob, _ := gossip.EncodeSummary(sent)
	if len(blob) < 5000 {
		t.Fatalf("summary is only %d bytes encoded; the test needs one spanning many packets", len(blob))
	}
	poll.Until(
		t,
		20*time.Second,
		func() bool { return hasSeq(p, sent.GetNode(), sent.GetSequence()) },
		"the oversize summary to arrive",
	)
	for i := 1; i < 3; i++ {
		got := summaryOf(p.Node(i), sent.GetNode())
		if !proto.Equal(got.Summary, sent) {
			t.Errorf("node %d holds a different summary than was sent", i)
		}
	}
}
