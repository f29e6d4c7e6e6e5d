package kvevents

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func mustIndex(t *testing.T, entries, minPod int, slack float64) *Index {
	t.Helper()
	cfg := DefaultIndexConfig()
	cfg.MaxBytes, cfg.MinPodEntries, cfg.PodShareSlack = int64(entries)*EntryBytes, minPod, slack
	x, err := NewIndexWith(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func seq(from, n int) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = uint64(from + i)
	}
	return hs
}

func held(x *Index, addr string, hashes []uint64) int32 {
	got := make([]int32, 1)
	x.Match(hashes, plugintest.Endpoints(plugintest.NewEndpoint(addr)), got)
	return got[0]
}

// TestFloodingPodCannotEvictOthers has one pod store ten times the index's size, before and
// after the others store theirs: the others keep every block, the flooder stays within its
// limit and evicts only its own entries.
func TestFloodingPodCannotEvictOthers(t *testing.T) {
	const size = 1000
	victims := []string{"10.0.0.2:8000", "10.0.0.3:8000", "10.0.0.4:8000"}
	const flooder = "10.0.0.1:8000"
	tests := []struct {
		name       string
		floodFirst bool
	}{
		{"flood after the others stored", false},
		{"flood before the others stored", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := mustIndex(t, size, 10, 2)
			flood := func() {
				for i := range 100 {
					x.Apply(flooder, batchOf(Event{Kind: KindStored, Hashes: seq(1_000_000+i*100, 100)}))
				}
			}
			x.Apply(flooder, batchOf(Event{Kind: KindStored, Hashes: seq(0, 1)})) // the flooder is known
			if tc.floodFirst {
				flood()
			}
			for i, v := range victims {
				x.Apply(v, batchOf(Event{Kind: KindStored, Hashes: seq(i*1000, 200)}))
			}
			flood()
			for i, v := range victims {
				if got := held(x, v, seq(i*1000, 200)); got != 200 {
					t.Errorf("pod %s holds %d of its 200 blocks after the flood", v, got)
				}
			}
			s := x.Stats()
			if s.Entries > size {
				t.Errorf("%d entries, bound %d", s.Entries, size)
			}
			if n := x.PodEntries(flooder); n > s.PodLimit || n > size-3*200 {
				t.Errorf("flooder holds %d entries, limit %d", n, s.PodLimit)
			}
			if s.EvictedBy[EvictPodLimit]+s.EvictedBy[EvictPodShare] == 0 {
				t.Errorf("no pod_limit or pod_share evictions: %+v", s)
			}
			// The flooder's newest blocks are what it keeps.
			if got := held(x, flooder, seq(1_000_000+99*100, 100)); got != 100 {
				t.Errorf("flooder's newest blocks: %d of 100 held", got)
			}
		})
	}
}

func TestPodLimit(t *testing.T) {
	tests := []struct {
		name         string
		entries, min int
		slack        float64
		pods         int
		want         int
	}{
		{"one pod may fill the index", 1000, 10, 2, 1, 1000},
		{"slack over the fair share", 1000, 10, 2, 4, 500},
		{"floor", 1000, 300, 2, 10, 300},
		{"floor above the index", 1000, 5000, 2, 2, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := mustIndex(t, tc.entries, tc.min, tc.slack)
			for i := range tc.pods {
				x.Apply(fmt.Sprintf("10.0.1.%d:1", i), batchOf(Event{Kind: KindStored, Hashes: seq(i, 1)}))
			}
			if got := x.Stats().PodLimit; got != tc.want {
				t.Errorf("pod limit %d, want %d", got, tc.want)
			}
			// A pod storing past its limit evicts its own oldest blocks.
			x.Apply("10.0.1.0:1", batchOf(Event{Kind: KindStored, Hashes: seq(10_000, tc.want+50)}))
			n := x.PodEntries("10.0.1.0:1")
			if n > tc.want {
				t.Errorf("pod holds %d entries, limit %d", n, tc.want)
			}
			if got := held(x, "10.0.1.0:1", seq(10_000+tc.want+50-n, n)); got != int32(n) {
				t.Errorf("newest %d blocks: %d held", n, got)
			}
		})
	}
}

// TestPodLimitRefreshKeepsRecent checks a pod's own eviction follows its storing order: a block
// stored again is the pod's newest.
func TestPodLimitRefreshKeepsRecent(t *testing.T) {
	x := mustIndex(t, 1000, 10, 1)
	x.Apply("10.0.0.2:1", batchOf(Event{Kind: KindStored, Hashes: seq(50_000, 1)}))
	// Two pods: limit 500.
	x.Apply("10.0.0.1:1", batchOf(Event{Kind: KindStored, Hashes: seq(0, 500)}))
	x.Apply("10.0.0.1:1", batchOf(Event{Kind: KindStored, Hashes: seq(0, 1)})) // block 0 refreshed
	x.Apply("10.0.0.1:1", batchOf(Event{Kind: KindStored, Hashes: seq(1000, 10)}))
	if got := held(x, "10.0.0.1:1", seq(0, 1)); got != 1 {
		t.Error("the refreshed block was evicted")
	}
	if got := held(x, "10.0.0.1:1", seq(1, 1)); got != 0 {
		t.Error("the pod's oldest block was kept")
	}
	if n := x.PodEntries("10.0.0.2:1"); n != 1 {
		t.Errorf("the other pod lost its block: %d entries", n)
	}
}

func TestEvictionMetrics(t *testing.T) {
	x := mustIndex(t, 100, 10, 2)
	reg := prometheus.NewRegistry()
	newMetrics(x, reg)
	x.Apply("10.0.0.1:1", batchOf(Event{Kind: KindStored, Hashes: seq(0, 150)})) // one pod: limit 100
	x.Apply("10.0.0.2:1", batchOf(Event{Kind: KindStored, Hashes: seq(1000, 10)}))
	// Two pods, full index: the second, below its share of 50, evicts the index's oldest.
	// The first pod, holding 90 of a full index (limit 100, share 50), evicts its own.
	x.Apply("10.0.0.1:1", batchOf(Event{Kind: KindStored, Hashes: seq(5000, 5)}))
	want := `
# HELP switchyard_gateway_kv_events_index_evictions_total Entries evicted from the KV event index by its bounds, ` +
		`by reason (pod_limit: the pod held its per-pod limit; pod_share: the index was full and the pod held its ` +
		`fair share; capacity: the index was full).
# TYPE switchyard_gateway_kv_events_index_evictions_total counter
switchyard_gateway_kv_events_index_evictions_total{reason="capacity"} 10
switchyard_gateway_kv_events_index_evictions_total{reason="pod_limit"} 50
switchyard_gateway_kv_events_index_evictions_total{reason="pod_share"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"switchyard_gateway_kv_events_index_evictions_total"); err != nil {
		t.Error(err)
	}
}

func TestPending(t *testing.T) {
	a, b := plugintest.NewEndpoint("10.0.0.1:8000"), plugintest.NewEndpoint("10.0.0.2:8000")
	eps := plugintest.Endpoints(a, b)
	t0 := time.Unix(1000, 0)
	const ttl = 2 * time.Second
	match := func(x *Index, at time.Time, hs []uint64) []int32 {
		got := make([]int32, len(eps))
		x.MatchAt(hs, eps, got, at)
		return got
	}
	known := func(x *Index) { // both pods have published
		x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{900}}))
		x.Apply(b.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{901}}))
	}
	tests := []struct {
		name  string
		steps func(x *Index)
		at    time.Duration
		want  []int32
	}{
		{"pending counts as held", func(x *Index) {
			x.AddPending(a.Meta().Address, []uint64{1, 2, 3}, t0, ttl)
		}, time.Second, []int32{3, 0}},
		{"pending continues a stored prefix", func(x *Index) {
			x.Apply(b.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1}}))
			x.AddPending(b.Meta().Address, []uint64{1, 2, 3}, t0, ttl)
		}, time.Second, []int32{0, 3}},
		{"ends at its TTL", func(x *Index) {
			x.AddPending(a.Meta().Address, []uint64{1, 2, 3}, t0, ttl)
		}, ttl, []int32{0, 0}},
		{"stored, then removed: the events decide", func(x *Index) {
			x.AddPending(a.Meta().Address, []uint64{1, 2, 3}, t0, ttl)
			x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2, 3}},
				Event{Kind: KindRemoved, Hashes: []uint64{2}}))
		}, time.Second, []int32{1, 0}},
		{"pod removed", func(x *Index) {
			x.AddPending(a.Meta().Address, []uint64{1, 2, 3}, t0, ttl)
			x.RemovePod(a.Meta().Address)
			x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{902}}))
		}, time.Second, []int32{0, 0}},
		{"a pod that never published is not pending", func(x *Index) {
			x.AddPending("10.0.0.9:8000", []uint64{1}, t0, ttl)
		}, time.Second, []int32{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := NewIndex(1 << 20)
			known(x)
			tc.steps(x)
			if got := match(x, t0.Add(tc.at), []uint64{1, 2, 3}); got[0] != tc.want[0] || got[1] != tc.want[1] {
				t.Errorf("match %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPendingBounded(t *testing.T) {
	cfg := DefaultIndexConfig()
	cfg.MaxPending = 100
	x, err := NewIndexWith(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	for i := range 10 {
		addr := fmt.Sprintf("10.0.0.%d:1", i)
		x.Apply(addr, batchOf(Event{Kind: KindStored, Hashes: []uint64{uint64(999_000 + i)}}))
		x.AddPending(addr, seq(i*1000, 50), t0, time.Minute)
	}
	s := x.Stats()
	if s.Pending != 100 || s.PendingDropped != 400 {
		t.Errorf("pending %d dropped %d, want 100 and 400", s.Pending, s.PendingDropped)
	}
	// The newest are kept.
	if got := pendingHeld(x, "10.0.0.9:1", seq(9000, 50), t0); got != 50 {
		t.Errorf("newest pending: %d of 50", got)
	}
	// Expired entries go when more are added.
	x.AddPending("10.0.0.0:1", seq(0, 1), t0.Add(2*time.Minute), time.Minute)
	if s := x.Stats(); s.Pending != 1 {
		t.Errorf("pending %d after expiry, want 1", s.Pending)
	}
	for i := range 10 {
		x.RemovePod(fmt.Sprintf("10.0.0.%d:1", i))
	}
	if s := x.Stats(); s.Pending != 0 {
		t.Errorf("pending %d after every pod left", s.Pending)
	}
}

func pendingHeld(x *Index, addr string, hs []uint64, at time.Time) int32 {
	got := make([]int32, 1)
	x.MatchAt(hs, []framework.Endpoint{plugintest.NewEndpoint(addr)}, got, at)
	return got[0]
}

func TestHeldBy(t *testing.T) {
	x := NewIndex(1 << 20)
	a, b := plugintest.NewEndpoint("10.0.0.1:8000"), plugintest.NewEndpoint("10.0.0.2:8000")
	x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2}}))
	x.Apply(b.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{3}}))
	x.AddPending(a.Meta().Address, []uint64{4}, time.Now(), time.Minute)
	got := make([]bool, 5)
	x.HeldBy([]uint64{1, 2, 3, 4, 5}, plugintest.Endpoints(a), got)
	if want := []bool{true, true, false, false, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("held by a: %v, want %v", got, want)
	}
	x.HeldBy([]uint64{1, 2, 3, 4, 5}, plugintest.Endpoints(a, b), got)
	if want := []bool{true, true, true, false, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("held by a or b: %v, want %v", got, want)
	}
}

// BenchmarkIngestAtBounds is BenchmarkIngest on a full index where every stored block is new:
// each one evicts, one pod (the flooder, a quarter of the batches of 64 blocks) by its pod limit,
// the others by their share or the index's capacity.
func BenchmarkIngestAtBounds(b *testing.B) {
	x := NewIndex(1 << 20) // about 18,700 entries
	pods := []string{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000", "10.0.0.4:8000"}
	var batch Batch
	batch.Events = make([]Event, 16)
	hs := make([]uint64, 16*4)
	for i := range batch.Events {
		batch.Events[i] = Event{Kind: KindStored, Hashes: hs[i*4 : i*4+4]}
	}
	next := uint64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for j := range hs {
			next++
			hs[j] = next * 0x9e3779b97f4a7c15
		}
		x.Apply(pods[i%len(pods)], &batch)
	}
	b.ReportMetric(float64(b.N*16)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkMatchPending is BenchmarkMatch with the prompt's blocks beyond the stored ones
// pending on every candidate.
func BenchmarkMatchPending(b *testing.B) {
	x := NewIndex(64 << 20)
	eps := make([]*plugintest.FakeEndpoint, 16)
	hs := make([]uint64, 256)
	for i := range hs {
		hs[i] = uint64(i + 1)
	}
	now := time.Now()
	for i := range eps {
		eps[i] = plugintest.NewEndpoint(fmt.Sprintf("10.0.1.%d:8000", i))
		x.Apply(eps[i].Meta().Address, batchOf(Event{Kind: KindStored, Hashes: hs[:16*i+1]}))
		x.AddPending(eps[i].Meta().Address, hs[:16*i+8], now, time.Hour)
	}
	cands := plugintest.Endpoints(eps...)
	blocks := make([]int32, len(cands))
	b.ReportAllocs()
	for range b.N {
		x.MatchAt(hs, cands, blocks, now)
	}
}
