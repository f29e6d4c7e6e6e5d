package clustertable_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/gossip"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

type poolSource []gossip.Summary

func (p poolSource) Snapshot() []gossip.Summary { return p }

type digestSource []gossip.Digest

func (d digestSource) Digests() []gossip.Digest { return d }

// denyCluster refuses one cluster name, counting its calls.
type denyCluster struct {
	name  string
	calls int
}

func (f *denyCluster) AcceptDigestCluster(_ string, c *gossipv1.DigestCluster) error {
	f.calls++
	if c.GetCluster() == f.name {
		return errors.New("not registered")
	}
	return nil
}

func regionDigest(
	origin, region string,
	seq uint64,
	age time.Duration,
	clusters ...*gossipv1.DigestCluster,
) gossip.Digest {
	return gossip.Digest{Origin: origin, Region: region, Age: age, Digest: &gossipv1.RegionDigest{Origin: origin,
		Region: region, Sequence: seq, GeneratedAtUnixNano: int64(seq), Clusters: clusters}}
}

func dc(name, node string, seq uint64, ageMs uint32, free uint64, urls ...string) *gossipv1.DigestCluster {
	return &gossipv1.DigestCluster{Cluster: name, Node: node, Sequence: seq, AgeMs: ageMs, GatewayUrls: urls,
		Models: []*gossipv1.ModelCapacity{{Name: "m", ReadyPods: 1, TotalKvTokens: 1000, FreeKvTokens: free}}}
}

// TestRegionalMergesDigests: remote clusters appear as one summary per gateway URL with the
// digest's figures; the newer of two aggregators' entries wins; the pool's own clusters and own
// region's digests are never taken from a digest; a refused cluster is left out (checked once
// per digest state); past the TTL a digest cluster is stale.
func TestRegionalMergesDigests(t *testing.T) {
	pool := poolSource{{Cluster: "local", Region: "a", Node: "gw-local",
		Summary: &gossipv1.CapacitySummary{Cluster: "local", Region: "a", GatewayUrl: "http://local"}}}
	digests := digestSource{
		regionDigest("agg-b1", "b", 10, 500*time.Millisecond,
			dc("rb", "gw-rb", 5, 100, 100, "http://rb-0", "http://rb-1"), dc("local", "x", 1, 0, 1, "http://evil"),
			dc("denied", "gw-d", 1, 0, 1, "http://denied")),
		regionDigest("agg-b2", "b", 20, 300*time.Millisecond, dc("rb", "gw-rb", 6, 100, 900, "http://rb-0")),
		regionDigest("agg-a", "a", 30, 0, dc("own", "gw-own", 1, 0, 1, "http://own")),
		regionDigest("agg-c", "c", 40, 9*time.Second, dc("rc", "gw-rc", 1, 2000, 1, "http://rc")),
	}
	filter := &denyCluster{name: "denied"}
	r := clustertable.NewRegional("a", pool, digests, filter, 10*time.Second, nil)
	snap := r.Snapshot()
	byNode := map[string]gossip.Summary{}
	for _, s := range snap {
		byNode[s.Node] = s
	}
	if len(snap) != 3 {
		t.Fatalf("snapshot %v, want local, rb (from agg-b2, one URL) and rc", snap)
	}
	rb := byNode["gw-rb"]
	if rb.Region != "b" || rb.Summary.GetGatewayUrl() != "http://rb-0" || rb.Summary.GetSequence() != 6 ||
		rb.Summary.GetModels()[0].GetFreeKvTokens() != 900 || rb.Age != 400*time.Millisecond || rb.Stale {
		t.Fatalf("rb: %+v, summary %v", rb, rb.Summary)
	}
	if rc := byNode["gw-rc"]; !rc.Stale || rc.Age != 11*time.Second {
		t.Fatalf("rc: age %v stale %v, want 11s and stale", rc.Age, rc.Stale)
	}
	if byNode["gw-local"].Summary.GetGatewayUrl() != "http://local" || len(byNode) != 3 {
		t.Fatalf("local cluster replaced or own region's digest merged: %v", snap)
	}
	calls := filter.calls
	r.Snapshot()
	if filter.calls != calls {
		t.Fatalf("filter called again for unchanged digests (%d → %d)", calls, filter.calls)
	}

	// Both URLs of the older aggregator's entry when it is the only one.
	r = clustertable.NewRegional("a", pool, digests[:1], nil, 10*time.Second, nil)
	var urls []string
	for _, s := range r.Snapshot() {
		if s.Cluster == "rb" {
			urls = append(urls, s.Summary.GetGatewayUrl())
		}
	}
	if len(urls) != 2 || urls[0] != "http://rb-0" || urls[1] != "http://rb-1" {
		t.Fatalf("rb's URLs %v", urls)
	}
}

// TestRegionalTableRoutesToDigestClusters: the table turns a digest cluster into a routing
// candidate in its region with the digest's capacity and gateway URL.
func TestRegionalTableRoutesToDigestClusters(t *testing.T) {
	digests := digestSource{regionDigest("agg-b", "b", 10, 0, dc("rb", "gw-rb", 5, 0, 700, "http://rb"))}
	table := clustertable.New(clustertable.Config{Region: "a"},
		clustertable.NewRegional("a", poolSource{}, digests, nil, 10*time.Second, nil), nil)
	view := table.View("m", nil)
	if len(view) != 1 {
		t.Fatalf("view %v", view)
	}
	e := view[0]
	if e.Cluster.Name != "rb" || e.Cluster.Region != "b" || e.Cluster.Stale || !e.Cluster.Serves ||
		e.Cluster.FreeKVTokens != 700 || len(e.URLs) != 1 || e.URLs[0] != "http://rb" {
		t.Fatalf("entry %+v", e)
	}
}
