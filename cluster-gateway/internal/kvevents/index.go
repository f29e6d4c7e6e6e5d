package kvevents

import (
	"sync"
)

// EntryBytes is the memory one (block, pod) entry costs, as the index accounts it: 32 bytes in
// the entry slab (plus its growth slack) and the map slot from block hash to its first entry
// (shared by the pods holding one block). BenchmarkIndexBytesPerEntry measures about 56.5.
const EntryBytes = 56

// maxPods is the number of distinct pods the index can name at once (pod ids are 16 bits).
const maxPods = 1 << 16

const none = -1

// EvictReason is why the index evicted an entry, the reason label of
// switchyard_gateway_kv_events_index_evictions_total.
type EvictReason int

// Eviction reasons.
const (
	// EvictPodLimit: the storing pod held its per-pod limit; its own oldest entry went.
	EvictPodLimit EvictReason = iota
	// EvictPodShare: the index was full and the storing pod held at least its fair share;
	// its own oldest entry went.
	EvictPodShare
	// EvictCapacity: the index was full and the storing pod held less than its share; the
	// index's oldest entry went.
	EvictCapacity
	numEvictReasons
)

// String returns the reason's label value.
func (r EvictReason) String() string {
	return [...]string{"pod_limit", "pod_share", "capacity"}[r]
}

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
	addr    string
	head    int32 // the pod's most recently stored entry
	tail    int32 // the pod's least recently stored entry
	n       int   // entries
	pending int   // pending entries (pending.go)
	inUse   bool
}

// Index maps block hashes to the pods holding them. Its memory is bounded: at most
// MaxBytes/EntryBytes entries, and each pod's share of them too (see IndexConfig), so that one
// pod storing endless blocks evicts its own oldest entries, not the other pods'. It also keeps
// the blocks of requests just routed to a pod as pending on that pod (pending.go). It is safe
// for concurrent use: ingestion takes the write lock once per batch, matching the read lock.
type Index struct {
	mu       sync.RWMutex
	cfg      IndexConfig
	max      int // entries
	podCap   int // entries one pod may hold (podLimits)
	fair     int // entries one pod may hold while the index is full (podLimits)
	slab     []entry
	free     int32
	heads    map[uint64]int32
	oldest   int32 // LRU ends
	newest   int32
	used     int
	pods     []podState
	podIDs   map[string]uint16
	freePods []uint16
	evicted  [numEvictReasons]uint64
	pend     pendingSet
	scratch  sync.Pool // *matchScratch (Match)
}

// NewIndex returns an empty index bounded to maxBytes, with the other settings of
// DefaultIndexConfig.
func NewIndex(maxBytes int64) *Index {
	cfg := DefaultIndexConfig()
	cfg.MaxBytes = maxBytes
	return newIndex(cfg)
}

// NewIndexWith returns an empty index configured by cfg.
func NewIndexWith(cfg IndexConfig) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newIndex(cfg), nil
}

func newIndex(cfg IndexConfig) *Index {
	x := &Index{
		cfg:    cfg,
		max:    max(1, int(cfg.MaxBytes/EntryBytes)),
		free:   none,
		heads:  make(map[uint64]int32),
		oldest: none,
		newest: none,
		podIDs: make(map[string]uint16),
		pend:   newPendingSet(cfg.MaxPending),
	}
	x.podLimits()
	x.scratch.New = func() any { return new(matchScratch) }
	return x
}

// podLimits recomputes the per-pod bounds from the number of pods the index names: a pod may
// hold up to max(entries/pods × PodShareSlack, MinPodEntries) entries (never more than the
// index), and, once the index is full, no more than its fair share entries/pods.
func (x *Index) podLimits() {
	n := max(1, len(x.podIDs))
	share := float64(x.max) / float64(n) * x.cfg.PodShareSlack
	x.podCap = min(x.max, max(int(share), x.cfg.MinPodEntries, 1))
	x.fair = max(1, x.max/n)
}

// Stats is a snapshot of the index's size.
type Stats struct {
	// Entries is the number of (block, pod) entries; Blocks the distinct block hashes; Pods
	// the pods with at least one entry or known to the index.
	Entries, Blocks, Pods int
	// Bytes is Entries × EntryBytes.
	Bytes int64
	// Evicted counts entries evicted by the memory bounds since the start, all reasons
	// together; EvictedBy splits them by reason (EvictReason).
	Evicted   uint64
	EvictedBy [numEvictReasons]uint64
	// PodLimit is the most entries one pod may hold now.
	PodLimit int
	// Pending is the number of pending (block, pod) entries; PendingDropped counts those
	// dropped before their TTL because MaxPending were held.
	Pending        int
	PendingDropped uint64
}

// Stats returns the index's size.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := Stats{
		Entries:        x.used,
		Blocks:         len(x.heads),
		Pods:           len(x.podIDs),
		Bytes:          int64(x.used) * EntryBytes,
		EvictedBy:      x.evicted,
		PodLimit:       x.podCap,
		Pending:        len(x.pend.until),
		PendingDropped: x.pend.dropped,
	}
	for _, n := range x.evicted {
		s.Evicted += n
	}
	return s
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
			if x.pods[id].pending > 0 {
				x.settle(id, e.Hashes)
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
	x.dropPending(id)
	delete(x.podIDs, addr)
	x.pods[id] = podState{head: none, tail: none}
	x.freePods = append(x.freePods, id)
	x.podLimits()
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
	x.pods[id] = podState{addr: addr, head: none, tail: none, inUse: true}
	x.podIDs[addr] = id
	x.podLimits()
	return id, true
}

// store records that pod id holds block h, as the newest entry. A new entry takes the place of
// an old one when a bound is reached: the pod's own oldest when the pod holds its limit, or holds
// its fair share of a full index; else the index's oldest.
func (x *Index) store(id uint16, h uint64) {
	if k := x.find(id, h); k != none {
		x.unlinkLRU(k)
		x.pushLRU(k)
		x.unlinkPod(k)
		x.pushPod(k)
		return
	}
	switch p := &x.pods[id]; {
	case p.n >= x.podCap:
		x.evict(p.tail, EvictPodLimit)
	case x.used >= x.max && p.n >= x.fair:
		x.evict(p.tail, EvictPodShare)
	case x.used >= x.max:
		x.evict(x.oldest, EvictCapacity)
	}
	k := x.alloc()
	e := &x.slab[k]
	*e = entry{hash: h, pod: id, lruPrev: none, lruNext: none}
	if head, ok := x.heads[h]; ok {
		e.chain = head
	} else {
		e.chain = none
	}
	x.heads[h] = k
	x.pushPod(k)
	x.pods[id].n++
	x.used++
	x.pushLRU(k)
}

func (x *Index) evict(k int32, why EvictReason) {
	x.evicted[why]++
	x.drop(k)
}

// pushPod links entry k at the head (newest end) of its pod's list.
func (x *Index) pushPod(k int32) {
	e := &x.slab[k]
	p := &x.pods[e.pod]
	e.podPrev, e.podNext = none, p.head
	if p.head != none {
		x.slab[p.head].podPrev = k
	} else {
		p.tail = k
	}
	p.head = k
}

// unlinkPod unlinks entry k from its pod's list.
func (x *Index) unlinkPod(k int32) {
	e := &x.slab[k]
	p := &x.pods[e.pod]
	if e.podPrev != none {
		x.slab[e.podPrev].podNext = e.podNext
	} else {
		p.head = e.podNext
	}
	if e.podNext != none {
		x.slab[e.podNext].podPrev = e.podPrev
	} else {
		p.tail = e.podPrev
	}
	e.podPrev, e.podNext = none, none
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
	x.unlinkPod(k)
	x.pods[e.pod].n--
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
