package prefixcache

import (
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// index maps block hashes to the endpoints believed to hold them, with one bounded LRU per
// endpoint. Memory is bounded by the per-endpoint capacity times the number of endpoints, and an
// endpoint's entries go when it leaves the store. It is safe for concurrent use.
type index struct {
	mu     sync.RWMutex
	owners map[uint64]ownerSet // block hash -> ids of pods holding it
	pods   map[*framework.EndpointMeta]*podLRU
	slots  []*podLRU // id -> pod (nil for a free slot)
	freeID []int32
}

func newIndex() *index {
	return &index{owners: make(map[uint64]ownerSet), pods: make(map[*framework.EndpointMeta]*podLRU)}
}

// insert records that e now holds hashes (the prompt's blocks, in chain order). Blocks are
// touched last-to-first so the chain's first blocks are the most recent and evicted last, as an
// engine's prefix cache frees a chain from its tail.
func (x *index) insert(e framework.Endpoint, capacity int, hashes []uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.pods[e.Meta()]
	if p == nil {
		p = x.addPod(e, capacity)
	}
	for i := len(hashes) - 1; i >= 0; i-- {
		added, ev, didEvict := p.touch(hashes[i])
		if added {
			o := x.owners[hashes[i]]
			o.add(p.id)
			x.owners[hashes[i]] = o
		}
		if didEvict {
			x.dropOwner(ev, p.id)
		}
	}
}

func (x *index) addPod(e framework.Endpoint, capacity int) *podLRU {
	var id int32
	if n := len(x.freeID); n > 0 {
		id, x.freeID = x.freeID[n-1], x.freeID[:n-1]
	} else {
		id = int32(len(x.slots))
		x.slots = append(x.slots, nil)
	}
	p := newPodLRU(id, capacity)
	x.slots[id] = p
	x.pods[e.Meta()] = p
	return p
}

func (x *index) dropOwner(h uint64, id int32) {
	o, ok := x.owners[h]
	if !ok {
		return
	}
	o.remove(id)
	if o.n == 0 {
		delete(x.owners, h)
		return
	}
	x.owners[h] = o
}

// removeLocked forgets the endpoint whose identity is key. Callers hold mu.
func (x *index) removeLocked(key *framework.EndpointMeta) {
	p := x.pods[key]
	if p == nil {
		return
	}
	for h := range p.pos {
		x.dropOwner(h, p.id)
	}
	delete(x.pods, key)
	x.slots[p.id] = nil
	x.freeID = append(x.freeID, p.id)
}

// retain forgets every endpoint whose address is not in eps.
func (x *index) retain(eps []framework.Endpoint) {
	keep := make(map[*framework.EndpointMeta]bool, len(eps))
	for _, e := range eps {
		keep[e.Meta()] = true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for e := range x.pods {
		if !keep[e] {
			x.removeLocked(e)
		}
	}
}

// resize sets e's capacity to capacity (bounded by [minCap, its configured maximum]),
// evicting the oldest blocks when it shrinks.
func (x *index) resize(e framework.Endpoint, capacity, minCap int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := x.pods[e.Meta()]
	if p == nil {
		return
	}
	p.cap = max(minCap, min(capacity, p.maxCap))
	for p.len() > p.cap {
		h, _ := p.evictOldest()
		x.dropOwner(h, p.id)
	}
}

// stats returns e's entry count and capacity (zeros when unknown).
func (x *index) stats(e framework.Endpoint) (n, capacity int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p := x.pods[e.Meta()]; p != nil {
		return p.len(), p.cap
	}
	return 0, 0
}

// prefixLen is how many leading blocks of hashes e holds.
func (x *index) prefixLen(e framework.Endpoint, hashes []uint64) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.pods[e.Meta()]
	if p == nil {
		return 0
	}
	n := 0
	for n < len(hashes) && p.has(hashes[n]) {
		n++
	}
	return n
}
