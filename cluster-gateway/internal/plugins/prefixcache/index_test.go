package prefixcache

import (
	"runtime"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
)

func TestIndexMemoryIsBounded(t *testing.T) {
	x := newIndex()
	eps := []framework.Endpoint{plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b")}
	hashes := make([]uint64, 16)
	for i := range 1000 {
		for j := range hashes {
			hashes[j] = uint64(i*100 + j + 1)
		}
		x.insert(eps[i%2], 100, hashes)
	}
	for _, e := range eps {
		if n, c := x.stats(e); n != 100 || c != 100 {
			t.Fatalf("%s holds %d entries (capacity %d), want 100", e.Meta().Address, n, c)
		}
	}
	if len(x.owners) != 200 {
		t.Fatalf("owners has %d hashes, want 200 (2 pods x 100)", len(x.owners))
	}
	x.retain(eps[:1])
	if len(x.owners) != 100 || len(x.pods) != 1 || len(x.freeID) != 1 {
		t.Fatalf("after dropping b: %d hashes, %d pods, %d free ids", len(x.owners), len(x.pods), len(x.freeID))
	}
	x.retain(nil)
	if len(x.owners) != 0 || len(x.pods) != 0 {
		t.Fatalf("after dropping all: %d hashes, %d pods", len(x.owners), len(x.pods))
	}
}

// The index's memory levels off once every pod's LRU is full: inserting four times its capacity
// more of new blocks (evicting as many) leaves the heap where it was when the LRUs first filled.
// This is the gateway heap growth a soak run sees: the index filling, not a leak.
func TestIndexMemoryLevelsOff(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 400,000 blocks")
	}
	const capacity = DefaultLRUCapacityPerServer
	x := newIndex()
	eps := []framework.Endpoint{plugintest.NewEndpoint("a"), plugintest.NewEndpoint("b")}
	hashes := make([]uint64, 20) // a 320-token prompt: the soak's prompts
	next := uint64(1)
	fill := func(blocks int) {
		for i := 0; i < blocks/len(hashes); i++ {
			for j := range hashes {
				hashes[j] = next
				next++
			}
			x.insert(eps[i%2], capacity, hashes)
		}
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	fill(2 * capacity)
	full := heap()
	fill(8 * capacity)
	after := heap()
	for _, e := range eps {
		if n, _ := x.stats(e); n != capacity {
			t.Fatalf("%s holds %d blocks, want %d", e.Meta().Address, n, capacity)
		}
	}
	used := int64(full) - int64(before)
	t.Logf("index full (2 pods x %d blocks): %d bytes, %.0f per block; after 4x more: %+d bytes",
		capacity, used, float64(used)/float64(2*capacity), int64(after)-int64(full))
	if grew := int64(after) - int64(full); grew > used/4+(1<<20) {
		t.Fatalf("heap grew %d bytes after the LRUs were full (%d to fill them)", grew, used)
	}
	runtime.KeepAlive(x)
}

func TestLRUOrder(t *testing.T) {
	l := newPodLRU(0, 3)
	for _, h := range []uint64{1, 2, 3} {
		l.touch(h)
	}
	l.touch(1) // 1 is now the most recent; 2 is the oldest
	_, ev, did := l.touch(4)
	if !did || ev != 2 {
		t.Fatalf("evicted %d (%v), want 2", ev, did)
	}
	if !l.has(1) || l.has(2) || !l.has(3) || !l.has(4) || l.len() != 3 {
		t.Fatalf("unexpected contents: %v", l.pos)
	}
	for i := range 1000 {
		l.touch(uint64(100 + i))
	}
	if len(l.nodes) > 3 {
		t.Fatalf("node slice grew to %d for capacity 3", len(l.nodes))
	}
}

func BenchmarkIndexInsert(b *testing.B) {
	x := newIndex()
	e := plugintest.NewEndpoint("a")
	hashes := make([]uint64, 64)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for j := range hashes {
			hashes[j] = uint64(i*64 + j)
		}
		i++
		x.insert(e, 31250, hashes)
	}
}

func TestOwnerSet(t *testing.T) {
	var o ownerSet
	for id := int32(0); id < 5; id++ {
		o.add(id)
	}
	o.remove(1) // inline slot refilled from the overflow
	o.remove(9) // absent: no change
	o.remove(4)
	got := map[int32]bool{}
	for i := int32(0); i < o.n; i++ {
		got[o.at(i)] = true
	}
	if o.n != 3 || !got[0] || !got[2] || !got[3] {
		t.Fatalf("set = %v (n=%d), want {0,2,3}", got, o.n)
	}
	for _, id := range []int32{0, 2, 3} {
		o.remove(id)
	}
	if o.n != 0 || len(o.more) != 0 {
		t.Fatalf("not empty: n=%d more=%v", o.n, o.more)
	}
}
