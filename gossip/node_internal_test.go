package gossip

import (
	"sync"
	"testing"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestSweepMarksStaleAndForgets(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Region, cfg.Insecure = "router", RoleRouter, "r1", true
	cfg.SummaryTTL, cfg.ForgetAfter, cfg.Now = 3*time.Second, time.Minute, clock.Now
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub, cancel := n.Subscribe()
	defer cancel()
	gen := clock.Now().UnixNano()
	n.store.apply(
		&gossipv1.CapacitySummary{Node: "gw-a", Cluster: "a", Sequence: 1, GeneratedAtUnixNano: gen},
		clock.Now(),
	)
	n.store.apply(
		&gossipv1.CapacitySummary{Node: "gw-b", Cluster: "b", Sequence: 1, GeneratedAtUnixNano: gen},
		clock.Now(),
	)

	steps := []struct {
		name      string
		advance   time.Duration
		departB   bool
		wantStale map[string]bool // node → stale; absent nodes must be forgotten
		wantNote  bool
	}{
		{"fresh", time.Second, false, map[string]bool{"gw-a": false, "gw-b": false}, false},
		{"b departs", 0, true, map[string]bool{"gw-a": false, "gw-b": true}, true},
		{"past TTL", 3 * time.Second, false, map[string]bool{"gw-a": true, "gw-b": true}, true},
		{"still listed", 50 * time.Second, false, map[string]bool{"gw-a": true, "gw-b": true}, false},
		{"forgotten after ForgetAfter", 10 * time.Second, false, map[string]bool{}, true},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		if st.departB {
			n.store.markDeparted("gw-b", clock.Now())
		}
		select { // drain earlier notifications
		case <-sub:
		default:
		}
		n.sweep()
		snap := n.Snapshot()
		if len(snap) != len(st.wantStale) {
			t.Fatalf("%s: %d summaries, want %d", st.name, len(snap), len(st.wantStale))
		}
		for _, s := range snap {
			if want, ok := st.wantStale[s.Node]; !ok || s.Stale != want {
				t.Errorf("%s: %s stale %v (age %v), want %v", st.name, s.Node, s.Stale, s.Age, want)
			}
		}
		select {
		case <-sub:
			if !st.wantNote {
				t.Errorf("%s: unexpected notification", st.name)
			}
		default:
			if st.wantNote {
				t.Errorf("%s: no notification", st.name)
			}
		}
	}
}

func TestSequenceStartsAboveClockAndAdvances(t *testing.T) {
	clock := &fakeClock{now: time.Unix(2_000_000, 0)}
	cfg := DefaultLANConfig()
	cfg.NodeName, cfg.Role, cfg.Cluster, cfg.Region, cfg.AdvertiseURL = "gw", RoleGateway, "c", "r", "http://gw:80"
	cfg.Insecure, cfg.Now = true, clock.Now
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.Publish(&gossipv1.CapacitySummary{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := n.Publish(&gossipv1.CapacitySummary{})
	if a.GetSequence() < uint64(clock.Now().UnixNano()) || b.GetSequence() <= a.GetSequence() {
		t.Errorf("sequences %d, %d", a.GetSequence(), b.GetSequence())
	}
	if a.GetCluster() != "c" || a.GetRegion() != "r" || a.GetGatewayUrl() != "http://gw:80" ||
		a.GetSchemaVersion() != SchemaVersion {
		t.Errorf("identity not stamped: %v", a)
	}
	n.seq.advancePast(b.GetSequence() + 1000) // seen from an earlier incarnation
	c, _ := n.Publish(&gossipv1.CapacitySummary{})
	if c.GetSequence() <= b.GetSequence()+1000 {
		t.Errorf("sequence %d not above an earlier incarnation's", c.GetSequence())
	}
	if n.queue.NumQueued() != 1 {
		t.Errorf("%d chunks queued; newer summaries should replace older ones", n.queue.NumQueued())
	}
}
