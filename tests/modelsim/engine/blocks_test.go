package engine

import "testing"

func TestBlockPoolLRU(t *testing.T) {
	p := newBlockPool(4)
	a, b := p.alloc(), p.alloc()
	p.register(a, 11)
	p.register(b, 22)
	p.release([]int32{a, b}) // b freed first: evicted before a
	if p.free() != 4 || p.used != 0 || p.nLRU != 2 {
		t.Fatalf("free=%d used=%d lru=%d", p.free(), p.used, p.nLRU)
	}
	if hits, idle := p.lookup([]uint64{11, 22, 33}); hits != 2 || idle != 2 {
		t.Fatalf("lookup hits=%d idle=%d", hits, idle)
	}
	p.alloc()
	p.alloc() // the two empty blocks
	p.alloc() // evicts b (hash 22), the least recently freed
	if hits, _ := p.lookup([]uint64{11}); hits != 1 {
		t.Fatal("block a evicted before b")
	}
	if hits, _ := p.lookup([]uint64{22}); hits != 0 {
		t.Fatal("block b still cached after eviction")
	}
	if got := p.acquire(11); got != a || p.free() != 0 || p.alloc() != -1 {
		t.Fatalf("acquire = %d, free = %d", got, p.free())
	}
}

func TestBlockPoolSharedRefs(t *testing.T) {
	p := newBlockPool(2)
	a := p.alloc()
	p.register(a, 7)
	p.acquire(7) // a second sequence shares the block
	p.release([]int32{a})
	if p.used != 1 || p.nLRU != 0 {
		t.Fatalf("shared block freed while referenced: used=%d lru=%d", p.used, p.nLRU)
	}
	p.release([]int32{a})
	if p.used != 0 || p.nLRU != 1 {
		t.Fatalf("used=%d lru=%d", p.used, p.nLRU)
	}
	p.register(p.alloc(), 7) // duplicate hash: ignored, the index keeps the first block
	if p.index[7] != a {
		t.Fatal("duplicate registration replaced the cached block")
	}
}
