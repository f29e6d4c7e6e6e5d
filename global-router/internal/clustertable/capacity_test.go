package clustertable_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
)

// The regions' spare capacity sums each cluster once (its freshest replica), over the clusters
// that can take traffic; stale and drained clusters are counted apart.
func TestRegionCapacityMetrics(t *testing.T) {
	now := time.Unix(1000, 0)
	src := source{
		summary("c1", "us-east-1", "gw-a", "http://a", now.Add(-2*time.Second), false, model("llama", 4)),
		summary("c1", "us-east-1", "gw-b", "http://b", now.Add(-time.Second), false, model("llama", 4)),
		summary("c2", "us-east-1", "gw-c", "http://c", now, false, model("llama", 2), model("qwen", 1)),
		summary("c3", "us-east-1", "gw-d", "http://d", now, true, model("llama", 8)),
		summary("c4", "eu-west-1", "gw-e", "http://e", now, false, model("llama", 3)),
		summary("c5", "eu-west-1", "gw-f", "http://f", now, false, model("llama", 3)),
	}
	reg := prometheus.NewRegistry()
	clustertable.New(clustertable.Config{Region: "us-east-1", Registerer: reg}, src, drains{"c5": true})
	want := `
# HELP switchyard_router_region_clusters Clusters the router knows per region, by state: available (fresh ` +
		`summary, not drained) or unavailable.
# TYPE switchyard_router_region_clusters gauge
switchyard_router_region_clusters{region="eu-west-1",state="available"} 1
switchyard_router_region_clusters{region="eu-west-1",state="unavailable"} 1
switchyard_router_region_clusters{region="us-east-1",state="available"} 2
switchyard_router_region_clusters{region="us-east-1",state="unavailable"} 1
# HELP switchyard_router_region_free_kv_tokens Free KV cache tokens over each region's available clusters: ` +
		`its spare capacity.
# TYPE switchyard_router_region_free_kv_tokens gauge
switchyard_router_region_free_kv_tokens{region="eu-west-1"} 300000
switchyard_router_region_free_kv_tokens{region="us-east-1"} 900000
# HELP switchyard_router_region_ready_pods Ready model-server pods over each region's available clusters.
# TYPE switchyard_router_region_ready_pods gauge
switchyard_router_region_ready_pods{region="eu-west-1"} 3
switchyard_router_region_ready_pods{region="us-east-1"} 7
# HELP switchyard_router_region_queue_depth Requests waiting (pods' and gateways' queues) over each region's ` +
		`available clusters.
# TYPE switchyard_router_region_queue_depth gauge
switchyard_router_region_queue_depth{region="eu-west-1"} 2
switchyard_router_region_queue_depth{region="us-east-1"} 6
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_router_region_clusters",
		"switchyard_router_region_free_kv_tokens", "switchyard_router_region_ready_pods",
		"switchyard_router_region_queue_depth"); err != nil {
		t.Fatal(err)
	}
}

// Regions advertised in gossip cannot grow the metrics without bound, nor put an invalid label
// value in them.
func TestRegionCapacityBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	var src source
	for i := range 200 {
		r := fmt.Sprintf("region-%03d", i)
		src = append(src, summary("c"+r, r, "gw-"+r, "http://"+r, now, false, model("llama", 1)))
	}
	src = append(src, summary("bad", "bad\xff", "gw-bad", "http://bad", now, false, model("llama", 1)))
	reg := prometheus.NewRegistry()
	clustertable.New(clustertable.Config{Region: "region-000", Registerer: reg}, src, drains{})
	if n := testutil.CollectAndCount(reg, "switchyard_router_region_ready_pods"); n != 64+1 {
		t.Fatalf("%d region series, want 64 and other", n)
	}
	mfs, err := reg.Gather() // fails on a label value that is not valid UTF-8
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_router_region_ready_pods" {
			continue
		}
		var other float64
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == "other" {
				other = m.GetGauge().GetValue()
			}
		}
		if other != 200-64+1 {
			t.Errorf("other region sums %v pods, want %d (the regions past the cap and the invalid name)", other,
				200-64+1)
		}
	}
	out, err := testutil.GatherAndCount(reg, "switchyard_router_region_clusters")
	if err != nil || out != 2*65 {
		t.Fatalf("%d cluster-state series (err %v), want %d", out, err, 2*65)
	}
}

// RegionCapacity returns the figures the region capacity metrics export, ordered by region.
func TestRegionCapacity(t *testing.T) {
	now := time.Unix(1000, 0)
	src := source{
		summary("c1", "us-east-1", "gw-a", "http://a", now.Add(-2*time.Second), false, model("llama", 4)),
		summary("c1", "us-east-1", "gw-b", "http://b", now.Add(-time.Second), false, model("llama", 4)),
		summary("c2", "us-east-1", "gw-c", "http://c", now, false, model("llama", 2), model("qwen", 1)),
		summary("c3", "us-east-1", "gw-d", "http://d", now, true, model("llama", 8)),
		summary("c4", "eu-west-1", "gw-e", "http://e", now, false, model("llama", 3)),
		summary("c5", "eu-west-1", "gw-f", "http://f", now, false, model("llama", 3)),
	}
	got := clustertable.New(clustertable.Config{Region: "us-east-1"}, src, drains{"c5": true}).RegionCapacity()
	want := []clustertable.RegionCapacity{
		{Region: "eu-west-1", Available: 1, Unavailable: 1, ReadyPods: 3, QueueDepth: 2, FreeKVTokens: 300000,
			TotalKVTokens: got[0].TotalKVTokens},
		{Region: "us-east-1", Available: 2, Unavailable: 1, ReadyPods: 7, QueueDepth: 6, FreeKVTokens: 900000,
			TotalKVTokens: got[1].TotalKVTokens},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d regions %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] || got[i].TotalKVTokens < got[i].FreeKVTokens {
			t.Errorf("region %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
