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
	return missingSeq(p, publisher, seq) == ""
}

func nodes(p *gossiptest.Pool) []*gossip.Node {
	out := make([]*gossip.Node, p.Len())
	for i := range out {
		out[i] = p.Node(i)
	}
	return out
}

// missingSeq names the first node that does not hold publisher's summary seq yet ("" when every
// node but the publisher does).
func missingSeq(p *gossiptest.Pool, publisher string, seq uint64) string {
	for i := 0; i < p.Len(); i++ {
		n := p.Node(i)
		if n.Name() == publisher {
			continue
		}
		if s := summaryOf(n, publisher); s == nil || s.Summary.GetSequence() != seq {
			return n.Name()
		}
	}
	return ""
}

// joined reports, with the first node that does not, whether every node lists want members
// alive or suspect: the pool has formed, and gossip reaches every member (memberlist gossips to
// a suspect node too; a starved node is often suspected for a moment on a loaded machine).
func joined(nodes []*gossip.Node, want int) (bool, string) {
	for _, n := range nodes {
		in := 0
		for _, m := range n.Members() {
			if m.State == gossip.StateAlive || m.State == gossip.StateSuspect {
				in++
			}
		}
		if in != want {
			return false, fmt.Sprintf("%s lists %d of %d members", n.Name(), in, want)
		}
	}
	return true, ""
}

// TestConvergence: in pools of 3, 10 and 50 nodes, the summaries of three publishers reach every
// node, and a node holds a fresh summary carrying its publisher's cluster and URL. It waits on
// each condition with generous deadlines (CPU starvation of 50 encrypted nodes under the race
// detector on a shared 2-core machine stretches convergence); how fast summaries spread is
// measured by the benchmarks, not here.
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
				// Staleness by age has its own test; here a slow run must not age the summaries out.
				c.SummaryTTL = time.Hour
				if tt.nodes > 3 {
					// Failure detection patient enough that a starved node is not declared dead
					// after it converged (this test is about spreading summaries, not detection).
					c.Timings = gossiptest.RelaxedTimings()
				}
			})
			all := nodes(p)
			start := time.Now()
			defer func() { t.Logf("converged in %v", time.Since(start)) }()
			poll.UntilState(t, 3*time.Minute, func() (bool, string) { return joined(all, tt.nodes) },
				fmt.Sprintf("%d nodes to join the pool", tt.nodes))
			t.Logf("pool formed after %v", time.Since(start))
			publishers := []int{0, tt.nodes / 2, tt.nodes - 1}
			want := map[string]uint64{}
			for _, i := range publishers {
				sent, err := p.Node(i).Publish(testSummary(5, 3, 0, uint32(i)))
				if err != nil {
					t.Fatal(err)
				}
				want[p.Node(i).Name()] = sent.GetSequence()
			}
			poll.UntilState(t, 3*time.Minute, func() (bool, string) {
				for name, seq := range want {
					if node := missingSeq(p, name, seq); node != "" {
						return false, fmt.Sprintf("%s lacks %s's summary %d", node, name, seq)
					}
				}
				return true, ""
			}, "the publishers' summaries to reach every node")
			last := p.Node(publishers[2])
			poll.UntilState(t, time.Minute, func() (bool, string) {
				got := summaryOf(p.Node(1), last.Name())
				ok := got != nil && !got.Stale && got.Cluster == gossiptest.Config(publishers[2]).Cluster &&
					got.Summary.GetGatewayUrl() != ""
				return ok, fmt.Sprintf("%+v", got)
			}, "node 1 to hold a fresh summary of "+last.Name())
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
