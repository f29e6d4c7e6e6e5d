package gossip

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
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
		{
			"more figures",
			250 * time.Millisecond,
			func(s *gossipv1.CapacitySummary) { s.Models[5].Adapters[2].Running++ },
			false,
			false,
		},
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

// While a member that predates compact deltas, or masks naming schema-2 fields, is alive, a
// publisher writes its deltas as that member reads them (the long header, every figure of a
// changed model); once it is gone, compact.
func TestPublishWritesDeltasEveryMemberReads(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Cluster, cfg.Region, cfg.AdvertiseURL, cfg.Insecure = "gw", RoleGateway, "c1", "r1", "http://gw:8080", true
	cfg.Now = clock.Now
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v1 := []byte{1, 2, 0, 2, 'r', '1', 0, 0} // a router's version-1 metadata: no feature byte
	old := &memberlist.Node{Name: "old", Addr: net.IPv4(127, 0, 0, 1), Port: 7946, Meta: v1}
	// A router of the version before schema 2: compact deltas, but masks only up to field 13.
	compactOnly := []byte{2, 2, 0, 2, 'r', '1', 0, 0, byte(featureCompactDeltas)}
	prev := &memberlist.Node{Name: "prev", Addr: net.IPv4(127, 0, 0, 1), Port: 7948, Meta: compactOnly}
	own := &memberlist.Node{Name: "gw", Addr: net.IPv4(127, 0, 0, 1), Port: 7947, Meta: n.meta}
	cur := deltaBase(1, 4, 3)
	cur.Node, cur.Sequence, cur.GeneratedAtUnixNano = "", 0, 0
	receiver := newStore(1 << 20)
	steps := []struct {
		name    string
		members map[*memberlist.Node]MemberState
		compact bool
	}{
		{"only this node", map[*memberlist.Node]MemberState{own: StateAlive}, true},
		{"an old member joined", map[*memberlist.Node]MemberState{old: StateAlive}, false},
		{"the old member died", map[*memberlist.Node]MemberState{old: StateDead}, true},
		{"a member before schema 2 joined", map[*memberlist.Node]MemberState{prev: StateAlive}, false},
		{"it left", map[*memberlist.Node]MemberState{prev: StateLeft}, true},
	}
	if _, err := n.Publish(cur); err != nil { // the base
		t.Fatal(err)
	}
	deliverQueued(t, n, receiver)
	for i, st := range steps {
		for m, state := range st.members {
			n.peers.update(n, m, state)
		}
		clock.Advance(250 * time.Millisecond)
		cur.Models[1].QueueDepth, cur.Models[2].Adapters[1].Running = uint32(10+i), uint32(20+i)
		out, err := n.Publish(cur)
		if err != nil {
			t.Fatal(err)
		}
		msgs := n.deltaQueue.GetBroadcasts(0, 1<<20)
		if len(msgs) != 1 {
			t.Fatalf("%s: %d delta messages queued, want 1", st.name, len(msgs))
		}
		c, err := decodeChunk(msgs[0])
		if err != nil {
			t.Fatal(err)
		}
		var d gossipv1.SummaryDelta
		if err := decodeBlob(c.payload, &d, 1<<20); err != nil {
			t.Fatal(err)
		}
		// What a reader of the previous version requires: node and base in the delta, figures in
		// full, no field it does not know. Models 1 (figures) and 2 (an adapter) changed.
		md := d.GetModels()
		if len(md) != 2 || len(md[1].GetAdapters()) != 1 {
			t.Fatalf("%s: delta %v, want models 1 and 2, an adapter of 2", st.name, &d)
		}
		legacy := d.GetNode() == "gw" && d.GetBaseSequence() != 0 && d.GetBaseDistance() == 0 &&
			md[0].GetFigures() != nil && md[0].GetFigureMask() == 0 &&
			md[1].GetAdapters()[0].GetFigures() != nil && md[1].GetAdapters()[0].GetFigureMask() == 0
		compact := d.GetNode() == "" && d.GetBaseDistance() != 0 && md[0].GetFigures() == nil && md[0].GetFigureMask() != 0 &&
			md[1].GetAdapters()[0].GetFigures() == nil && md[1].GetAdapters()[0].GetFigureMask() != 0
		if legacy == st.compact || compact != st.compact {
			t.Errorf("%s: delta %v, want compact = %v", st.name, &d, st.compact)
		}
		if _, _, err := receiver.addChunk(c, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		if got := receiver.entriesCopy()["gw"].summary; !proto.Equal(got, out) {
			t.Fatalf("%s: receiver rebuilt a different summary", st.name)
		}
	}
}
