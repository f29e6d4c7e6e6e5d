package engine

// blockPool is the KV cache: a fixed number of blocks, each either in use (refcount > 0), free and
// empty, or free but still holding a cached prefix block (evictable, kept in LRU order). A cached
// block is found by its chained prefix hash. Not safe for concurrent use: the engine's lock guards it.
type blockPool struct {
	refs  []int32
	hash  []uint64 // 0 = holds no cacheable prefix block
	prev  []int32  // LRU links of evictable cached blocks (-1 = none)
	next  []int32
	head  int32 // least recently freed cached block (evicted first)
	tail  int32
	nLRU  int
	empty []int32 // free blocks without content
	index map[uint64]int32
	used  int    // blocks with refs > 0
	kv    *kvLog // prefix-cache events, nil when they are not recorded
}

func newBlockPool(n int) *blockPool {
	p := &blockPool{
		refs: make([]int32, n), hash: make([]uint64, n),
		prev: make([]int32, n), next: make([]int32, n),
		head: -1, tail: -1, empty: make([]int32, n),
		index: make(map[uint64]int32, n),
	}
	for i := range n {
		p.empty[i] = int32(n - 1 - i)
		p.prev[i], p.next[i] = -1, -1
	}
	return p
}

// total is the number of blocks.
func (p *blockPool) total() int { return len(p.refs) }

// free is the number of blocks that can be allocated (empty or evictable).
func (p *blockPool) free() int { return len(p.empty) + p.nLRU }

// lookup counts how many leading hashes are cached, and how many of those are free (refs == 0),
// so that taking them would reduce free().
func (p *blockPool) lookup(hashes []uint64) (hits, idle int) {
	for _, h := range hashes {
		b, ok := p.index[h]
		if !ok {
			break
		}
		hits++
		if p.refs[b] == 0 {
			idle++
		}
	}
	return hits, idle
}

// acquire takes a reference on the cached block holding hash h (which must be cached).
func (p *blockPool) acquire(h uint64) int32 {
	b := p.index[h]
	if p.refs[b] == 0 {
		p.unlink(b)
		p.used++
	}
	p.refs[b]++
	return b
}

// alloc takes an empty block, evicting the least recently used cached block if none is empty.
// It returns -1 when every block is in use.
func (p *blockPool) alloc() int32 {
	var b int32
	switch {
	case len(p.empty) > 0:
		b = p.empty[len(p.empty)-1]
		p.empty = p.empty[:len(p.empty)-1]
	case p.head >= 0:
		b = p.head
		p.unlink(b)
		delete(p.index, p.hash[b])
		if p.kv != nil {
			p.kv.add(KVEvent{Kind: KVRemoved, Hash: p.hash[b]})
		}
		p.hash[b] = 0
	default:
		return -1
	}
	p.refs[b] = 1
	p.used++
	return b
}

// register records that block b now holds the prefix block with hash h, unless another block
// already holds it; it reports whether b was registered.
func (p *blockPool) register(b int32, h uint64) bool {
	if h == 0 || p.hash[b] != 0 {
		return false
	}
	if _, dup := p.index[h]; dup {
		return false
	}
	p.hash[b] = h
	p.index[h] = b
	return true
}

// release drops one reference on each block, last block first, so that a sequence's tail is
// evicted before its shared prefix.
func (p *blockPool) release(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		p.refs[b]--
		if p.refs[b] > 0 {
			continue
		}
		p.used--
		if p.hash[b] != 0 {
			p.pushLRU(b)
		} else {
			p.empty = append(p.empty, b)
		}
	}
}

func (p *blockPool) pushLRU(b int32) {
	p.prev[b], p.next[b] = p.tail, -1
	if p.tail >= 0 {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.nLRU++
}

func (p *blockPool) unlink(b int32) {
	if p.prev[b] >= 0 {
		p.next[p.prev[b]] = p.next[b]
	} else {
		p.head = p.next[b]
	}
	if p.next[b] >= 0 {
		p.prev[p.next[b]] = p.prev[b]
	} else {
		p.tail = p.prev[b]
	}
	p.prev[b], p.next[b] = -1, -1
	p.nLRU--
}
