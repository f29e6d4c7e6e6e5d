package gossip

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func aggregatorNodes(t *testing.T, clock *fakeClock) (gw, wan *Node) {
	t.Helper()
	cfg := func(name string, role Role) Config {
		c := DefaultLANConfig()
		c.NodeName, c.Role, c.Region, c.Insecure, c.Now = name, role, "r", true, clock.Now
		c.SummaryTTL, c.ForgetAfter = time.Hour, 2*time.Hour
		if role == RoleGateway {
			c.Cluster, c.AdvertiseURL = "c1", "http://c1.test"
		}
		return c
	}
	var err error
	if gw, err = New(cfg("gw", RoleGateway)); err != nil {
		t.Fatal(err)
	}
	if wan, err = New(cfg("wan", RoleRouter)); err != nil {
		t.Fatal(err)
	}
	return gw, wan
}

func publishSummary(t *testing.T, gw *Node, ready uint32) {
	t.Helper()
	if _, err := gw.Publish(&gossipv1.CapacitySummary{Models: []*gossipv1.ModelCapacity{
		{Name: "m", ReadyPods: ready, TotalKvTokens: 1000, FreeKvTokens: 500}}}); err != nil {
		t.Fatal(err)
	}
}

// TestAggregatorPublishing: a full digest first, nothing while nothing changed within the
// heartbeat, a heartbeat delta listing no cluster, a delta at once on a significant change, and
// a full digest again after FullInterval.
func TestAggregatorPublishing(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	gw, wan := aggregatorNodes(t, clock)
	cfg := DefaultAggregatorConfig()
	cfg.Region, cfg.Regional, cfg.Aggregators = "r", gw, wan
	a, err := NewAggregator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	publishSummary(t, gw, 2)
	// Four more clusters of the region, so that a delta naming one is well below the full size.
	var held []heldSummary
	for i := 2; i <= 5; i++ {
		held = append(held, heldSummary{summary: &gossipv1.CapacitySummary{Node: fmt.Sprintf("gw-%d", i),
			Sequence: uint64(clock.Now().UnixNano()), GeneratedAtUnixNano: clock.Now().UnixNano(),
			Cluster: fmt.Sprintf("c%d", i), Region: "r", GatewayUrl: fmt.Sprintf("http://c%d.test", i),
			Models: []*gossipv1.ModelCapacity{{Name: "m", ReadyPods: 1}}}})
	}
	st, err := encodeState(held)
	if err != nil {
		t.Fatal(err)
	}
	(&delegate{n: gw}).MergeRemoteState(st, false)
	state := func() *gossipv1.RegionDigest {
		ds := wan.Digests()
		if len(ds) != 1 {
			t.Fatalf("%d digest states, want 1", len(ds))
		}
		return ds[0].Digest
	}
	steps := []struct {
		name      string
		advance   time.Duration
		ready     uint32 // 0: no new summary
		published bool
		full      bool
		listed    int // clusters in the message (delta: changed ones)
	}{
		{"first: full", 0, 0, true, true, 5},
		{"unchanged within the heartbeat", 300 * time.Millisecond, 0, false, false, 0},
		{"heartbeat delta", time.Second, 0, true, false, 0},
		{"significant change: delta at once", 250 * time.Millisecond, 3, true, false, 1},
		{"after FullInterval: full", 15 * time.Second, 0, true, true, 5},
	}
	var seq uint64
	for _, s := range steps {
		clock.Advance(s.advance)
		if s.ready > 0 {
			publishSummary(t, gw, s.ready)
		}
		a.publish(clock.Now())
		d := state()
		if got := d.GetSequence() != seq; got != s.published {
			t.Fatalf("%s: published %v, want %v", s.name, got, s.published)
		}
		seq = d.GetSequence()
		if !s.published {
			continue
		}
		msg := wan.Digests()[0]
		isFull := msg.Delta == nil
		if isFull != s.full {
			t.Fatalf("%s: full %v, want %v", s.name, isFull, s.full)
		}
		raw := msg.Full
		if !isFull {
			raw = msg.Delta
		}
		m, err := DecodeDigest(raw, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.GetClusters()) != s.listed {
			t.Fatalf("%s: message lists %d clusters, want %d", s.name, len(m.GetClusters()), s.listed)
		}
		if c := d.GetClusters(); len(c) != 5 || c[0].GetCluster() != "c1" || c[0].GetGatewayUrls()[0] != "http://c1.test" {
			t.Fatalf("%s: state %v", s.name, d)
		}
	}
	if got := state().GetClusters()[0].GetModels()[0].GetReadyPods(); got != 3 {
		t.Fatalf("ready pods %d, want 3", got)
	}
}

// TestAggregatorBoundsDigests: clusters past MaxBytes are left out, those without ready pods
// first, and counted.
func TestAggregatorBoundsDigests(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	gw, wan := aggregatorNodes(t, clock)
	reg := prometheus.NewRegistry()
	cfg := DefaultAggregatorConfig()
	cfg.Region, cfg.Regional, cfg.Aggregators, cfg.MaxBytes, cfg.Registerer = "r", gw, wan, 4096, reg
	a, err := NewAggregator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cur := map[string]*gossipv1.DigestCluster{}
	for i := range 400 {
		ready := uint32(1)
		if i%2 == 1 {
			ready = 0
		}
		name := fmt.Sprintf("cluster-%03d", i)
		cur[name] = &gossipv1.DigestCluster{Cluster: name, GatewayUrls: []string{"https://" + name + ".example:8443"},
			Node: "gw-" + name, Models: []*gossipv1.ModelCapacity{{Name: "model-" + name, ReadyPods: ready}}}
	}
	d := a.bounded(cur)
	if n := len(d.GetClusters()); n == 0 || n >= 400 {
		t.Fatalf("%d clusters listed", n)
	}
	if b, _ := EncodeDigest(d); len(b) > cfg.MaxBytes {
		t.Fatalf("digest of %d bytes, bound %d", len(b), cfg.MaxBytes)
	}
	for _, c := range d.GetClusters() {
		if readyPods(c) == 0 && len(d.GetClusters()) <= 200 {
			t.Fatalf("cluster %s without ready pods listed before clusters with some", c.GetCluster())
		}
	}
	if got := testutil.ToFloat64(a.metrics.omitted); got != float64(400-len(d.GetClusters())) {
		t.Fatalf("omitted %v, want %d", got, 400-len(d.GetClusters()))
	}
}

func TestSignificant(t *testing.T) {
	base := &gossipv1.DigestCluster{Cluster: "c", GatewayUrls: []string{"u"}, Models: []*gossipv1.ModelCapacity{{
		Name: "m", ReadyPods: 4, TotalKvTokens: 1000, FreeKvTokens: 500, QueueDepth: 10, Saturation: 0.2,
		PredictedTtftMs: 100}}}
	tests := []struct {
		name string
		edit func(m *gossipv1.ModelCapacity, c *gossipv1.DigestCluster)
		want bool
	}{
		{"same", func(*gossipv1.ModelCapacity, *gossipv1.DigestCluster) {}, false},
		{"free KV by 2%", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.FreeKvTokens = 520 }, false},
		{"free KV by 10%", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.FreeKvTokens = 400 }, true},
		{"queue by 1", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.QueueDepth = 11 }, false},
		{"queue by 5", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.QueueDepth = 15 }, true},
		{"ready pods", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.ReadyPods = 3 }, true},
		{"saturated", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.Saturated = true }, true},
		{"saturation by 0.05", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.Saturation = 0.25 }, false},
		{"TTFT by 50%", func(m *gossipv1.ModelCapacity, _ *gossipv1.DigestCluster) { m.PredictedTtftMs = 150 }, true},
		{"gateway URLs", func(_ *gossipv1.ModelCapacity, c *gossipv1.DigestCluster) { c.GatewayUrls = []string{"v"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := proto.CloneOf(base)
			tt.edit(cur.GetModels()[0], cur)
			if got := significant(base, cur); got != tt.want {
				t.Fatalf("significant = %v, want %v", got, tt.want)
			}
		})
	}
}
