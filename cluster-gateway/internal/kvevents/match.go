package kvevents

import (
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// matchScratch is Match's per-call memory, pooled: pos[pod id] is the candidate's index in eps
// (or none), ids[i] the pod id of eps[i] (or none).
type matchScratch struct {
	pos []int32
	ids []int32
}

// Match writes into blocks[i] how many leading blocks of hashes (a prompt's chained block
// hashes, in order) the pod of eps[i] holds, counting its pending blocks (AddPending) that are
// still live now. blocks has len(eps).
func (x *Index) Match(hashes []uint64, eps []framework.Endpoint, blocks []int32) {
	x.MatchAt(hashes, eps, blocks, time.Now())
}

// MatchAt is Match with the time pending blocks are judged at.
func (x *Index) MatchAt(hashes []uint64, eps []framework.Endpoint, blocks []int32, now time.Time) {
	clear(blocks)
	if len(hashes) == 0 || len(eps) == 0 {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	sc := x.scratch.Get().(*matchScratch)
	defer x.scratch.Put(sc)
	alive, pending := x.candidates(sc, eps)
	at := now.UnixNano()
	for depth, h := range hashes {
		if alive == 0 {
			return
		}
		progressed := 0
		if k, ok := x.heads[h]; ok {
			for ; k != none; k = x.slab[k].chain {
				if j := sc.pos[x.slab[k].pod]; j != none && blocks[j] == int32(depth) {
					blocks[j]++
					progressed++
				}
			}
		}
		if pending && progressed < alive {
			progressed += x.matchPending(sc.ids, blocks, h, int32(depth), at)
		}
		alive = progressed
	}
}

// candidates fills sc for eps and returns how many candidates hold or await any block, and
// whether any awaits one.
func (x *Index) candidates(sc *matchScratch, eps []framework.Endpoint) (alive int, pending bool) {
	if cap(sc.pos) < len(x.pods) {
		sc.pos = make([]int32, len(x.pods))
	}
	sc.pos = sc.pos[:len(x.pods)]
	for i := range sc.pos {
		sc.pos[i] = none
	}
	if cap(sc.ids) < len(eps) {
		sc.ids = make([]int32, len(eps))
	}
	sc.ids = sc.ids[:len(eps)]
	for i, e := range eps {
		sc.ids[i] = none
		id, ok := x.podIDs[e.Meta().Address]
		if !ok {
			continue
		}
		if p := &x.pods[id]; p.n > 0 || p.pending > 0 {
			sc.pos[id], sc.ids[i] = int32(i), int32(id)
			alive++
			pending = pending || p.pending > 0
		}
	}
	return alive, pending
}

// matchPending advances the candidates still at depth that await block h on their pod, and
// returns how many it advanced.
func (x *Index) matchPending(ids []int32, blocks []int32, h uint64, depth int32, at int64) int {
	n := 0
	for i, id := range ids {
		if id == none || blocks[i] != depth || x.pods[id].pending == 0 {
			continue
		}
		if x.pend.live(uint16(id), h, at) {
			blocks[i]++
			n++
		}
	}
	return n
}

// HeldBy sets held[i] to whether a pod of eps holds hashes[i] (stored, not pending). held has
// len(hashes).
func (x *Index) HeldBy(hashes []uint64, eps []framework.Endpoint, held []bool) {
	clear(held)
	if len(hashes) == 0 || len(eps) == 0 {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	sc := x.scratch.Get().(*matchScratch)
	defer x.scratch.Put(sc)
	if alive, _ := x.candidates(sc, eps); alive == 0 {
		return
	}
	for i, h := range hashes {
		for k, ok := x.heads[h]; ok && k != none; k = x.slab[k].chain {
			if sc.pos[x.slab[k].pod] != none {
				held[i] = true
				break
			}
		}
	}
}
