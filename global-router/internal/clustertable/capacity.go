package clustertable

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/promlabel"
	"github.com/switchyard-dev/switchyard/gossip"
)

// maxCapacityRegions bounds the regions the capacity metrics name; the rest are summed under
// promlabel.Other.
const maxCapacityRegions = 64

// regionCapacity is one region's capacity, summed over its available clusters (fresh, not
// drained): the spare capacity a planner adds clusters from.
type regionCapacity struct {
	available, unavailable int
	readyPods, queue       uint64
	freeKV, totalKV        uint64
}

// Descriptions of the capacity metrics (labels: region; clusters also state).
var (
	descRegionClusters = prometheus.NewDesc("switchyard_router_region_clusters",
		"Clusters the router knows per region, by state: available (fresh summary, not drained) or unavailable.",
		[]string{"region", "state"}, nil)
	descRegionReadyPods = prometheus.NewDesc("switchyard_router_region_ready_pods",
		"Ready model-server pods over each region's available clusters.", []string{"region"}, nil)
	descRegionFreeKV = prometheus.NewDesc("switchyard_router_region_free_kv_tokens",
		"Free KV cache tokens over each region's available clusters: its spare capacity.", []string{"region"}, nil)
	descRegionTotalKV = prometheus.NewDesc("switchyard_router_region_total_kv_tokens",
		"KV cache tokens over each region's available clusters.", []string{"region"}, nil)
	descRegionQueue = prometheus.NewDesc("switchyard_router_region_queue_depth",
		"Requests waiting (pods' and gateways' queues) over each region's available clusters.",
		[]string{"region"}, nil)
)

// capacityCollector exports the regions' capacity from the gossip snapshot at each scrape, so
// a region or cluster that leaves leaves no series behind.
type capacityCollector struct{ t *Table }

func (c capacityCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRegionClusters, descRegionReadyPods, descRegionFreeKV,
		descRegionTotalKV, descRegionQueue} {
		ch <- d
	}
}

func (c capacityCollector) Collect(ch chan<- prometheus.Metric) {
	regions := c.t.regionCapacity(c.t.src.Snapshot())
	for _, name := range slices.Sorted(maps.Keys(regions)) {
		r := regions[name]
		gauge := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
		}
		gauge(descRegionClusters, uint64(r.available), name, "available")
		gauge(descRegionClusters, uint64(r.unavailable), name, "unavailable")
		gauge(descRegionReadyPods, r.readyPods, name)
		gauge(descRegionFreeKV, r.freeKV, name)
		gauge(descRegionTotalKV, r.totalKV, name)
		gauge(descRegionQueue, r.queue, name)
	}
}

// regionCapacity sums snap's clusters by region, each cluster counted once, from its freshest
// replica's summary. Regions past maxCapacityRegions (in name order) and names that cannot be a
// label value are summed under promlabel.Other.
func (t *Table) regionCapacity(snap []gossip.Summary) map[string]*regionCapacity {
	best := map[string]*gossip.Summary{} // by cluster
	for i := range snap {
		s := &snap[i]
		if b := best[s.Cluster]; b == nil || fresher(*s, *b) {
			best[s.Cluster] = s
		}
	}
	names := map[string]bool{}
	for _, s := range best {
		if promlabel.Valid(s.Region) && s.Region != promlabel.Other {
			names[s.Region] = true
		}
	}
	kept := slices.Sorted(maps.Keys(names))
	if len(kept) > maxCapacityRegions {
		kept = kept[:maxCapacityRegions]
	}
	out := map[string]*regionCapacity{}
	for _, s := range best {
		region := s.Region
		if _, ok := slices.BinarySearchFunc(kept, region, strings.Compare); !ok {
			region = promlabel.Other
		}
		r := out[region]
		if r == nil {
			r = &regionCapacity{}
			out[region] = r
		}
		if s.Stale || (t.drains != nil && t.drains.Drained(s.Cluster, s.Region)) {
			r.unavailable++
			continue
		}
		r.available++
		for _, m := range s.Summary.GetModels() {
			r.readyPods += uint64(m.GetReadyPods())
			r.queue += uint64(m.GetQueueDepth())
			r.totalKV += m.GetTotalKvTokens()
			r.freeKV += min(m.GetFreeKvTokens(), m.GetTotalKvTokens())
		}
	}
	return out
}

// RegionCapacity is one region's capacity as the region capacity metrics export it: summed over
// its available clusters (fresh summary, not drained), each cluster counted once from its
// freshest replica.
type RegionCapacity struct {
	// Region is the region's name, or promlabel.Other for the regions past the metrics' bound
	// and names that cannot be a label value.
	Region string
	// Available and Unavailable count the region's clusters by state.
	Available, Unavailable int
	// ReadyPods, QueueDepth, FreeKVTokens and TotalKVTokens sum the available clusters' figures.
	ReadyPods, QueueDepth       uint64
	FreeKVTokens, TotalKVTokens uint64
}

// RegionCapacity returns every region's capacity, ordered by name: the figures of the
// switchyard_router_region_* metrics, computed from the gossip snapshot now.
func (t *Table) RegionCapacity() []RegionCapacity {
	regions := t.regionCapacity(t.src.Snapshot())
	out := make([]RegionCapacity, 0, len(regions))
	for _, name := range slices.Sorted(maps.Keys(regions)) {
		r := regions[name]
		out = append(out, RegionCapacity{Region: name, Available: r.available, Unavailable: r.unavailable,
			ReadyPods: r.readyPods, QueueDepth: r.queue, FreeKVTokens: r.freeKV, TotalKVTokens: r.totalKV})
	}
	return out
}
