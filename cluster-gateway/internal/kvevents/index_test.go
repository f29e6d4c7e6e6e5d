package kvevents

import (
	"runtime"
	"slices"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func batchOf(evs ...Event) *Batch { return &Batch{Events: evs} }

func TestIndexMatch(t *testing.T) {
	a, b, c := plugintest.NewEndpoint(
		"10.0.0.1:8000",
	), plugintest.NewEndpoint(
		"10.0.0.2:8000",
	), plugintest.NewEndpoint(
		"10.0.0.3:8000",
	)
	eps := plugintest.Endpoints(a, b, c)
	tests := []struct {
		name   string
		apply  func(x *Index)
		hashes []uint64
		want   []int32
	}{
		{name: "empty", apply: func(*Index) {}, hashes: []uint64{1, 2}, want: []int32{0, 0, 0}},
		{name: "leading blocks per pod", apply: func(x *Index) {
			x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2, 3}}))
			x.Apply(b.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1}}))
		}, hashes: []uint64{1, 2, 3, 4}, want: []int32{3, 1, 0}},
		{name: "a hole ends the prefix", apply: func(x *Index) {
			x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 3}}))
		}, hashes: []uint64{1, 2, 3}, want: []int32{1, 0, 0}},
		{name: "removed", apply: func(x *Index) {
			x.Apply(
				a.Meta().Address,
				batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2, 3}}, Event{Kind: KindRemoved, Hashes: []uint64{2}}),
			)
		}, hashes: []uint64{1, 2, 3}, want: []int32{1, 0, 0}},
		{name: "cleared", apply: func(x *Index) {
			x.Apply(a.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2}}, Event{Kind: KindCleared}))
			x.Apply(b.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2}}))
		}, hashes: []uint64{1, 2}, want: []int32{0, 2, 0}},
		{name: "removed pod", apply: func(x *Index) {
			x.Apply(c.Meta().Address, batchOf(Event{Kind: KindStored, Hashes: []uint64{1, 2}}))
			x.RemovePod(c.Meta().Address)
		}, hashes: []uint64{1, 2}, want: []int32{0, 0, 0}},
		{name: "pod not a candidate", apply: func(x *Index) {
			x.Apply("10.0.0.9:8000", batchOf(Event{Kind: KindStored, Hashes: []uint64{1}}))
		}, hashes: []uint64{1}, want: []int32{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := NewIndex(1 << 20)
			tc.apply(x)
			got := make([]int32, len(eps))
			x.Match(tc.hashes, eps, got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIndexBoundedByBytes(t *testing.T) {
	x := NewIndex(100 * EntryBytes)
	for i := range uint64(1000) {
		x.Apply("10.0.0.1:8000", batchOf(Event{Kind: KindStored, Hashes: []uint64{i}}))
	}
	s := x.Stats()
	if s.Entries != 100 || s.Bytes != 100*EntryBytes || s.Evicted != 900 || s.Blocks != 100 {
		t.Fatalf("stats %+v, want 100 entries and 900 evicted", s)
	}
	// The newest 100 stay: 900..999.
	eps := plugintest.Endpoints(plugintest.NewEndpoint("10.0.0.1:8000"))
	got := make([]int32, 1)
	if x.Match([]uint64{950, 951}, eps, got); got[0] != 2 {
		t.Errorf("newest entries evicted: match %d", got[0])
	}
	if x.Match([]uint64{5}, eps, got); got[0] != 0 {
		t.Errorf("oldest entry kept")
	}
	// Storing again refreshes an entry: 900 survives the next 99 insertions.
	x.Apply("10.0.0.1:8000", batchOf(Event{Kind: KindStored, Hashes: []uint64{900}}))
	for i := range uint64(99) {
		x.Apply("10.0.0.1:8000", batchOf(Event{Kind: KindStored, Hashes: []uint64{5000 + i}}))
	}
	if x.Match([]uint64{900}, eps, got); got[0] != 1 {
		t.Errorf("a refreshed entry was evicted")
	}
}

func TestIndexSharedBlocks(t *testing.T) {
	x := NewIndex(1 << 20)
	addrs := []string{"10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1"}
	for _, a := range addrs {
		x.Apply(a, batchOf(Event{Kind: KindStored, Hashes: []uint64{7, 8}}))
	}
	x.Apply(addrs[1], batchOf(Event{Kind: KindRemoved, Hashes: []uint64{7}}))
	x.RemovePod(addrs[0])
	if s := x.Stats(); s.Entries != 3 || s.Blocks != 2 {
		t.Fatalf("stats %+v, want 3 entries over 2 blocks", s)
	}
	if n := x.PodEntries(addrs[2]); n != 2 {
		t.Errorf("pod entries %d, want 2", n)
	}
	x.ClearPod(addrs[2])
	x.ClearPod(addrs[1])
	if s := x.Stats(); s.Entries != 0 || s.Blocks != 0 {
		t.Fatalf("stats %+v after clearing, want empty", s)
	}
}

// BenchmarkIngest measures applying decoded batches of 16 BlockStored events of 4 blocks each
// (and as many removals) to an index at its memory bound: events per second on one core.
func BenchmarkIngest(b *testing.B) {
	x := NewIndex(64 << 20)
	d := NewDecoder(Limits{MaxEvents: 1024, MaxHashes: 1024})
	pods := []string{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000", "10.0.0.4:8000"}
	payloads := make([][]byte, 64)
	for i := range payloads {
		evs := make([]ev, 0, 32)
		for j := range 16 {
			h := uint64(i*1000 + j*4)
			evs = append(evs, stored(h, h+1, h+2, h+3))
		}
		for j := range 16 {
			evs = append(evs, removed(uint64((i+32)%64*1000+j*4)))
		}
		payloads[i] = encodeBatch(b, int64(0), evs...)
	}
	var batch Batch
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := d.Decode(payloads[i%len(payloads)], &batch); err != nil {
			b.Fatal(err)
		}
		x.Apply(pods[i%len(pods)], &batch)
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkIndexBytesPerEntry measures the heap the index holds per (block, pod) entry, one
// million entries over 4 pods with half the blocks shared by two pods.
func BenchmarkIndexBytesPerEntry(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		x := NewIndex(1 << 30)
		const n = 1 << 20
		hs := make([]uint64, 256)
		for i := 0; i < n/256; i++ {
			for j := range hs {
				hs[j] = uint64(i*256+j) * 0x9e3779b97f4a7c15
			}
			pod := []string{"10.0.0.1:1", "10.0.0.2:1", "10.0.0.3:1", "10.0.0.4:1"}[i%4]
			if i%2 == 1 { // every other chunk repeats the previous blocks on another pod
				for j := range hs {
					hs[j] = uint64((i-1)*256+j) * 0x9e3779b97f4a7c15
				}
			}
			x.Apply(pod, batchOf(Event{Kind: KindStored, Hashes: hs}))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		entries := x.Stats().Entries
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(entries), "B/entry")
		runtime.KeepAlive(x)
	}
}

// BenchmarkMatch measures matching a 256-block prompt against 16 candidates.
func BenchmarkMatch(b *testing.B) {
	x := NewIndex(64 << 20)
	eps := make([]*plugintest.FakeEndpoint, 16)
	hs := make([]uint64, 256)
	for i := range hs {
		hs[i] = uint64(i + 1)
	}
	for i := range eps {
		eps[i] = plugintest.NewEndpoint("10.0.1." + string(rune('a'+i)) + ":8000")
		x.Apply(eps[i].Meta().Address, batchOf(Event{Kind: KindStored, Hashes: hs[:16*i]}))
	}
	cands := plugintest.Endpoints(eps...)
	blocks := make([]int32, len(cands))
	b.ReportAllocs()
	for range b.N {
		x.Match(hs, cands, blocks)
	}
}
