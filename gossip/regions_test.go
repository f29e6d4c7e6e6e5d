package gossip_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/gossiptest"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// regionKeys verifies digests with each region's key.
type regionKeys map[string]ed25519.PublicKey

func (k regionKeys) VerifyDigest(d *gossipv1.RegionDigest) error {
	pub, ok := k[d.GetRegion()]
	if !ok {
		return fmt.Errorf("region %q has no key", d.GetRegion())
	}
	return gossip.VerifyDigest(d, pub)
}

// region is one region's pool: node 0 a gateway, node 1 the aggregator's regional node, node 2 a
// router.
type region struct {
	name     string
	pool     *gossiptest.Pool
	key      ed25519.PrivateKey
	reg      *prometheus.Registry // the router's
	stopAggr context.CancelFunc
}

func startRegion(t *testing.T, name string, keys regionKeys, key ed25519.PrivateKey) *region {
	r := &region{name: name, key: key, reg: prometheus.NewRegistry()}
	r.pool = gossiptest.Start(t, 3, func(i int, c *gossip.Config) {
		c.Region, c.DigestVerifier, c.DigestTTL = name, keys, 2*time.Second
		c.NodeName = fmt.Sprintf("%s-%d", name, i)
		switch i {
		case 0:
			c.Cluster, c.AdvertiseURL = "c-"+name, "http://gw-"+name+".test:8080"
		case 1, 2:
			c.Role, c.Cluster, c.AdvertiseURL = gossip.RoleRouter, "", ""
		}
		if i == 2 {
			c.Registerer = r.reg
		}
	})
	return r
}

func (r *region) router() *gossip.Node { return r.pool.Node(2) }

// publishLoop publishes the region's gateway summary every 200 ms until the test ends.
func (r *region) publishLoop(t *testing.T, free uint64) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gw := r.pool.Node(0)
	go func() {
		for ctx.Err() == nil {
			_, _ = gw.Publish(&gossipv1.CapacitySummary{Models: []*gossipv1.ModelCapacity{
				{Name: "m", ReadyPods: 2, TotalKvTokens: 100000, FreeKvTokens: free}}})
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// digestCluster returns the cluster of region as n's digests list it, fresh, or nil.
func digestCluster(n *gossip.Node, region, cluster string) *gossipv1.DigestCluster {
	for _, d := range n.Digests() {
		if d.Region != region || d.Stale {
			continue
		}
		for _, c := range d.Digest.GetClusters() {
			if c.GetCluster() == cluster {
				return c
			}
		}
	}
	return nil
}

// TestRegionalPools runs two regions, each its own pool (a gateway, an aggregator, a router),
// and a pool of the two aggregators: each region's router learns the other region's cluster from
// the digest, with its figures and gateway URL; a digest signed with a key other than the
// region's is neither stored nor relayed, and is counted; when region b's aggregator stops, its
// digest goes stale at region a's router.
func TestRegionalPools(t *testing.T) {
	pubA, keyA, _ := ed25519.GenerateKey(nil)
	pubB, keyB, _ := ed25519.GenerateKey(nil)
	keys := regionKeys{"a": pubA, "b": pubB}
	a, b := startRegion(t, "a", keys, keyA), startRegion(t, "b", keys, keyB)
	wan := gossiptest.Start(t, 2, func(i int, c *gossip.Config) {
		c.Role, c.Cluster, c.AdvertiseURL = gossip.RoleRouter, "", ""
		c.Region = []string{"a", "b"}[i]
		c.NodeName = "wan-" + c.Region
		c.DigestVerifier, c.DigestTTL = keys, 2*time.Second
		c.SigningKey = []ed25519.PrivateKey{keyA, keyB}[i]
	})
	for i, r := range []*region{a, b} {
		cfg := gossip.DefaultAggregatorConfig()
		cfg.Region, cfg.Regional, cfg.Aggregators = r.name, r.pool.Node(1), wan.Node(i)
		cfg.Interval, cfg.MinInterval, cfg.FullInterval = 300*time.Millisecond, 100*time.Millisecond, 3*time.Second
		agg, err := gossip.NewAggregator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		r.stopAggr = cancel
		go func() { _ = agg.Run(ctx) }()
	}
	a.publishLoop(t, 40000)
	b.publishLoop(t, 60000)

	poll.Until(t, 20*time.Second, func() bool {
		return digestCluster(a.router(), "b", "c-b") != nil && digestCluster(b.router(), "a", "c-a") != nil
	}, "each router learns the other region's cluster from a digest")
	got := digestCluster(a.router(), "b", "c-b")
	if len(got.GetGatewayUrls()) != 1 || got.GetGatewayUrls()[0] != "http://gw-b.test:8080" ||
		len(got.GetModels()) != 1 || got.GetModels()[0].GetFreeKvTokens() == 0 || got.GetNode() != "b-0" {
		t.Fatalf("region b's cluster at region a's router: %v", got)
	}
	if digestCluster(a.router(), "a", "c-a") != nil {
		t.Fatal("region a's own digest relayed into region a's pool")
	}

	// A member of region a's pool (it holds the gossip key) publishes a digest for region b
	// signed with a key of its own.
	_, rogue, _ := ed25519.GenerateKey(nil)
	forged := &gossipv1.RegionDigest{Region: "b", Clusters: []*gossipv1.DigestCluster{
		{Cluster: "c-evil", GatewayUrls: []string{"http://evil.test"}, Models: []*gossipv1.ModelCapacity{{Name: "m"}}}}}
	if _, err := a.pool.Node(0).PublishDigest(forged, rogue); err != nil {
		t.Fatal(err)
	}
	rejected := func() float64 {
		return testutil.ToFloat64(counterOf(t, a.reg, "switchyard_gossip_digests_total", "rejected"))
	}
	poll.Until(t, 10*time.Second, func() bool { return rejected() >= 1 }, "the forged digest is counted")
	if c := digestCluster(a.router(), "b", "c-evil"); c != nil {
		t.Fatalf("forged cluster stored: %v", c)
	}

	// Region b's aggregator stops: its digest ages out at region a's router.
	b.stopAggr()
	wan.Stop(1)
	poll.Until(t, 15*time.Second, func() bool { return digestCluster(a.router(), "b", "c-b") == nil },
		"region b's cluster ages out")
}

// counterOf returns the counter of a vector gathered from reg with the given single label value.
func counterOf(t *testing.T, reg *prometheus.Registry, name, label string) prometheus.Counter {
	t.Helper()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}
