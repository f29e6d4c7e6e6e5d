package kvevents

import (
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// EntryBytes is the memory one (block, pod) entry costs, as the index accounts it: 32 bytes in
// the entry slab (plus its growth slack) and the map slot from block hash to its first entry
// (shared by the pods holding one block). BenchmarkIndexBytesPerEntry measures about 56.5.
const EntryBytes = 56

// maxPods is the number of distinct pods the index can name at once (pod ids are 16 bits).
const maxPods = 1 << 16

const none = -1

// entry is one (block, pod) pair. Entries live in a slab and are linked three ways: into the
// index-wide LRU, into their pod's list (to drop a pod without a scan) and into the chain of
// entries of the same block.
type entry struct {
	hash             uint64
	lruPrev, lruNext int32
	podPrev, podNext int32
	chain            int32 // next entry of the same block, or the next free entry
	pod              uint16
}

type podState struct {
	addr  string
	head  int32 // first entry of the pod's list
	n     int   // entries
	inUse bool
}

// Index maps block hashes to the pods holding them. Its memory is bounded: at most
// MaxIndexBytes/EntryBytes entries, the least recently stored evicted first. It is safe for
// concurrent use: ingestion takes the write lock once per batch, matching the read lock.
type Index struct {
	mu       sync.RWMutex
	max      int
	slab     []entry
	free     int32
	heads    map[uint64]int32
	oldest   int32 // LRU ends
	newest   int32
	used     int
	pods     []podState
	podIDs   map[string]uint16
	freePods []uint16
	evicted  uint64
	scratch  sync.Pool // *[]int32 indexed by pod id (Match)
}

// NewIndex returns an empty index bounded to maxBytes.
func NewIndex(maxBytes int64) *Index {
	x := &Index{
		max:    max(1, int(maxBytes/EntryBytes)),
		free:   none,
		heads:  make(map[uint64]int32),
		oldest: none,
		newest: none,
		podIDs: make(map[string]uint16),
	}
	x.scratch.New = func() any { return new([]int32) }
	return x
}

// Stats is a snapshot of the index's size.
type Stats struct {
	// Entries is the number of (block, pod) entries; Blocks the distinct block hashes; Pods
	// the pods with at least one entry or known to the index.
	Entries, Blocks, Pods int
	// Bytes is Entries × EntryBytes.
	Bytes int64
	// Evicted counts entries evicted by the memory bound since the start.
	Evicted uint64
}

// Stats returns the index's size.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return Stats{
		Entries: x.used,
		Blocks:  len(x.heads),
		Pods:    len(x.podIDs),
		Bytes:   int64(x.used) * EntryBytes,
		Evicted: x.evicted,
	}
}

// PodEntries returns the number of entries held for the pod at addr.
func (x *Index) PodEntries(addr string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if id, ok := x.podIDs[addr]; ok {
		return x.pods[id].n
	}
	return 0
}

// Apply applies a batch of events from the pod at addr. It reports false when the index cannot
// name another pod (65,536 are known).
func (x *Index) Apply(addr string, b *Batch) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	id, ok := x.podID(addr)
	if !ok {
		return false
	}
	for i := range b.Events {
		e := &b.Events[i]
		switch e.Kind {
		case KindStored:
			for _, h := range e.Hashes {
				x.store(id, h)
			}
		case KindRemoved:
			for _, h := range e.Hashes {
				if k := x.find(id, h); k != none {
					x.drop(k)
				}
			}
		case KindCleared:
			x.clearPod(id)
		}
	}
	return true
}

// ClearPod drops every entry of the pod at addr (AllBlocksCleared, a sequence gap).
func (x *Index) ClearPod(addr string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if id, ok := x.podIDs[addr]; ok {
		x.clearPod(id)
	}
}

// RemovePod drops the pod at addr and its entries (the pod left the endpoint set).
func (x *Index) RemovePod(addr string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id, ok := x.podIDs[addr]
	if !ok {
		return
	}
	x.clearPod(id)
	delete(x.podIDs, addr)
	x.pods[id] = podState{head: none}
	x.freePods = append(x.freePods, id)
}

func (x *Index) podID(addr string) (uint16, bool) {
	if id, ok := x.podIDs[addr]; ok {
		return id, true
	}
	var id uint16
	switch {
	case len(x.freePods) > 0:
		id = x.freePods[len(x.freePods)-1]
		x.freePods = x.freePods[:len(x.freePods)-1]
	case len(x.pods) < maxPods:
		id = uint16(len(x.pods))
		x.pods = append(x.pods, podState{})
	default:
		return 0, false
	}
	x.pods[id] = podState{addr: addr, head: none, inUse: true}
	x.podIDs[addr] = id
	return id, true
}

// store records that pod id holds block h, as the newest entry.
func (x *Index) store(id uint16, h uint64) {
	if k := x.find(id, h); k != none {
		x.unlinkLRU(k)
		x.pushLRU(k)
		return
	}
	if x.used >= x.max {
		x.evicted++
		x.drop(x.oldest)
	}
	k := x.alloc()
	e := &x.slab[k]
	*e = entry{hash: h, pod: id, lruPrev: none, lruNext: none, podPrev: none}
	if head, ok := x.heads[h]; ok {
		e.chain = head
	} else {
		e.chain = none
	}
	x.heads[h] = k
	p := &x.pods[id]
	e.podNext = p.head
	if p.head != none {
		x.slab[p.head].podPrev = k
	}
	p.head = k
	p.n++
	x.used++
	x.pushLRU(k)
}

// find returns the entry of block h held by pod id, or none.
func (x *Index) find(id uint16, h uint64) int32 {
	k, ok := x.heads[h]
	if !ok {
		return none
	}
	for ; k != none; k = x.slab[k].chain {
		if x.slab[k].pod == id {
			return k
		}
	}
	return none
}

func (x *Index) alloc() int32 {
	if x.free != none {
		k := x.free
		x.free = x.slab[k].chain
		return k
	}
	x.slab = append(x.slab, entry{})
	return int32(len(x.slab) - 1)
}

// drop unlinks entry k everywhere and frees it.
func (x *Index) drop(k int32) {
	e := &x.slab[k]
	x.unlinkChain(k, e.hash)
	x.unlinkLRU(k)
	p := &x.pods[e.pod]
	if e.podPrev != none {
		x.slab[e.podPrev].podNext = e.podNext
	} else {
		p.head = e.podNext
	}
	if e.podNext != none {
		x.slab[e.podNext].podPrev = e.podPrev
	}
	p.n--
	x.used--
	*e = entry{chain: x.free}
	x.free = k
}

func (x *Index) unlinkChain(k int32, h uint64) {
	head := x.heads[h]
	if head == k {
		if next := x.slab[k].chain; next != none {
			x.heads[h] = next
		} else {
			delete(x.heads, h)
		}
		return
	}
	for j := head; j != none; j = x.slab[j].chain {
		if x.slab[j].chain == k {
			x.slab[j].chain = x.slab[k].chain
			return
		}
	}
}

func (x *Index) pushLRU(k int32) {
	e := &x.slab[k]
	e.lruPrev, e.lruNext = x.newest, none
	if x.newest != none {
		x.slab[x.newest].lruNext = k
	} else {
		x.oldest = k
	}
	x.newest = k
}

func (x *Index) unlinkLRU(k int32) {
	e := &x.slab[k]
	if e.lruPrev != none {
		x.slab[e.lruPrev].lruNext = e.lruNext
	} else {
		x.oldest = e.lruNext
	}
	if e.lruNext != none {
		x.slab[e.lruNext].lruPrev = e.lruPrev
	} else {
		x.newest = e.lruPrev
	}
	e.lruPrev, e.lruNext = none, none
}

func (x *Index) clearPod(id uint16) {
	for x.pods[id].head != none {
		x.drop(x.pods[id].head)
	}
}

// Match writes into blocks[i] how many leading blocks of hashes (a prompt's chained block
// hashes, in order) the pod of eps[i] holds. blocks has len(eps).
func (x *Index) Match(hashes []uint64, eps []framework.Endpoint, blocks []int32) {
	clear(blocks)
	if len(hashes) == 0 || len(eps) == 0 {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	sp := x.scratch.Get().(*[]int32)
	defer x.scratch.Put(sp)
	pos := *sp
	if cap(pos) < len(x.pods) {
		pos = make([]int32, len(x.pods))
		*sp = pos
	}
	pos = pos[:len(x.pods)]
	for i := range pos {
		pos[i] = none
	}
	alive := 0
	for i, e := range eps {
		if id, ok := x.podIDs[e.Meta().Address]; ok && x.pods[id].n > 0 {
			pos[id] = int32(i)
			alive++
		}
	}
	for depth, h := range hashes {
		if alive == 0 {
			return
		}
		k, ok := x.heads[h]
		if !ok {
			return
		}
		progressed := 0
		for ; k != none; k = x.slab[k].chain {
			if j := pos[x.slab[k].pod]; j != none && blocks[j] == int32(depth) {
				blocks[j]++
				progressed++
			}
		}
		alive = progressed
	}
}
