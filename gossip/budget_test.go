package gossip_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
)

// A publisher that publishes faster than its share of the broadcast budget holds deltas back and
// sends the newest later: every node still ends with its latest summary. A small pool within its
// budget holds nothing back.
func TestBudgetHeldDeltasReachThePool(t *testing.T) {
	tests := []struct {
		name     string
		budget   int
		wantHeld bool
	}{
		{"default budget, 5 nodes", gossip.DefaultLANConfig().BroadcastBudget, false},
		{"budget spent: every delta paced", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			p := gossiptest.Start(t, 5, func(i int, c *gossip.Config) {
				c.BroadcastBudget = tt.budget
				if i == 0 {
					c.Registerer = reg
				}
			})
			poll.Until(t, 30*time.Second, func() bool { return gossiptest.AllMembersAlive(nodes(p), 5) }, "the pool to form")
			var last uint64
			for i := 0; i < 12; i++ { // back to back: far faster than any budget allows
				sent, err := p.Node(0).Publish(testSummary(20, 10, 0, uint32(i)))
				if err != nil {
					t.Fatal(err)
				}
				last = sent.GetSequence()
			}
			// The publisher sends the newest of the held deltas once the budget allows: 11 deltas,
			// or 2 when the first spent the budget and the other 10 were held, each superseding
			// the one before.
			want := 11.0
			if tt.wantHeld {
				want = 2
			}
			poll.Until(
				t,
				10*time.Second,
				func() bool { return deltaEvents(t, reg, "published") == want },
				"the held delta to be sent",
			)
			poll.Until(
				t,
				30*time.Second,
				func() bool { return hasSeq(p, p.Node(0).Name(), last) },
				"the latest summary to reach every node",
			)
			if held, superseded := deltaEvents(
				t,
				reg,
				"held",
			), deltaEvents(
				t,
				reg,
				"superseded",
			); (held > 0) != tt.wantHeld ||
				superseded != max(held-1, 0) {
				t.Fatalf(
					"%v deltas held back, %v superseded: want held = %v, all but the last superseded",
					held,
					superseded,
					tt.wantHeld,
				)
			}
		})
	}
}
