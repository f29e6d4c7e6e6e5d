package gossip

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// A publisher sends a full summary first, then deltas against it, and a new full one when the
// models change, when the delta grows past half the full size, when a peer asks (at most once a
// second) and after FullSummaryInterval.
func TestPublishChoosesFullOrDelta(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Cluster, cfg.Region, cfg.AdvertiseURL, cfg.Insecure = "gw", RoleGateway, "c1", "r1", "http://gw:8080", true
	cfg.FullSummaryInterval, cfg.Now = 10*time.Second, clock.Now
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cur := deltaBase(1, 20, 10)
	cur.Node, cur.Sequence, cur.GeneratedAtUnixNano = "", 0, 0
	steps := []struct {
		name     string
		advance  time.Duration
		change   func(s *gossipv1.CapacitySummary)
		wantFull bool // a peer asks for a full summary before this step
		full     bool
	}{
		{"first", 0, nil, false, true},
		{"figures", 250 * time.Millisecond, func(s *gossipv1.CapacitySummary) { s.Models[0].QueueDepth++ }, false, false},
		{"more figures", 250 * time.Millisecond, func(s *gossipv1.CapacitySummary) { s.Models[5].Adapters[2].Running++ }, false, false},
		{"model added", 250 * time.Millisecond, func(s *gossipv1.CapacitySummary) {
			s.Models = append(s.Models, &gossipv1.ModelCapacity{Name: "new"})
		}, false, true},
		{"asked too soon after a full", 250 * time.Millisecond, nil, true, false},
		{"asked, a second later", time.Second, nil, false, true},
		{"heartbeat", 2 * time.Second, nil, false, false},
		{"interval passed", 10 * time.Second, nil, false, true},
		{"every adapter replaced", 250 * time.Millisecond, func(s *gossipv1.CapacitySummary) {
			for i, m := range s.Models {
				for j, a := range m.Adapters {
					a.Name = fmt.Sprintf("tenant-%d-adapter-%d", i, j)
				}
			}
		}, false, true},
	}
	receiver := newStore(1 << 20)
	for _, st := range steps {
		clock.Advance(st.advance)
		if st.change != nil {
			st.change(cur)
		}
		if st.wantFull {
			n.handleWantFull(encodeWantFull("gw"))
		}
		deltasBefore, beatsBefore := n.deltaQueue.NumQueued(), n.beatQueue.NumQueued()
		out, err := n.Publish(cur)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if gotFull := n.pub.base == out; gotFull != st.full {
			t.Errorf("%s: full = %v, want %v", st.name, gotFull, st.full)
		}
		sentBeat := n.beatQueue.NumQueued() > beatsBefore
		if sentDelta := n.deltaQueue.NumQueued() > deltasBefore || sentBeat; sentDelta == st.full {
			t.Errorf("%s: delta queued = %v with full = %v", st.name, sentDelta, st.full)
		}
		// A delta after a quiet gap is a heartbeat, sent as often as a full summary.
		if wantBeat := !st.full && st.advance >= heartbeatGap; sentBeat != wantBeat {
			t.Errorf("%s: heartbeat queued = %v, want %v", st.name, sentBeat, wantBeat)
		}
		// What a receiver that saw every message rebuilds is what Publish returned.
		deliverQueued(t, n, receiver)
		if got := receiver.entriesCopy()["gw"].summary; !proto.Equal(got, out) {
			t.Fatalf("%s: receiver rebuilt a different summary", st.name)
		}
	}
}

// deliverQueued hands every chunk queued at n to st, as gossip would.
func deliverQueued(t *testing.T, n *Node, st *store) {
	t.Helper()
	for _, q := range [][][]byte{n.queue.GetBroadcasts(0, 1<<20), n.beatQueue.GetBroadcasts(0, 1<<20), n.deltaQueue.GetBroadcasts(0, 1<<20)} {
		for _, m := range q {
			c, err := decodeChunk(m)
			if err != nil {
				continue // a leave
			}
			if _, _, err := st.addChunk(c, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFullRequestsRateLimited(t *testing.T) {
	var f fullRequests
	t0 := time.Unix(100, 0)
	steps := []struct {
		node string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", 500 * time.Millisecond, false},
		{"b", 500 * time.Millisecond, true},
		{"a", baseGrace, true},
		{"a", baseGrace + 500*time.Millisecond, false},
	}
	for i, st := range steps {
		if got := f.allow(st.node, t0.Add(st.at)); got != st.want {
			t.Errorf("step %d: allow(%s, +%v) = %v, want %v", i, st.node, st.at, got, st.want)
		}
	}
}
