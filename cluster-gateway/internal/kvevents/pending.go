package kvevents

import "time"

// Pending blocks. Between the moment the scheduler sends a request to a pod and the moment the
// pod's BlockStored events for the request's prompt arrive (after its prefill, plus the
// publisher's batching), the index does not know the pod is about to hold those blocks. The
// precise-prefix-cache-scorer therefore adds the blocks of each request it routed as pending on
// the chosen pod for a short TTL: Match counts a live pending block as held, so the next
// requests of a burst sharing the prefix see that pod as the one that will have it. A pending
// entry ends at its TTL, or when the pod's BlockStored for that block arrives (from then on the
// stored entry, and its BlockRemoved, decide), or when the pod leaves the endpoint set.

// pendKey is one (block, pod) pending entry.
type pendKey struct {
	hash uint64
	pod  uint16
}

// pendRec is one AddPending of a key, in the order they were added (TTLs are added to the
// time of the call, so this is also the order they end in, per TTL).
type pendRec struct {
	key   pendKey
	until int64 // unix nanoseconds
}

// pendingSet is a bounded set of pending entries: until holds each live key's end, ring the
// additions oldest first (a key added again has a newer record; its older ones are stale and
// skipped). The ring is allocated at the first addition, so an index nobody adds pending blocks
// to pays nothing for it.
type pendingSet struct {
	until    map[pendKey]int64
	ring     []pendRec
	capacity int
	start    int // index of the oldest record in ring
	n        int // records in ring
	dropped  uint64
}

func newPendingSet(capacity int) pendingSet {
	return pendingSet{until: make(map[pendKey]int64), capacity: max(1, capacity)}
}

// live reports whether the pod awaits block h at time at (unix nanoseconds).
func (s *pendingSet) live(pod uint16, h uint64, at int64) bool {
	u, ok := s.until[pendKey{h, pod}]
	return ok && at < u
}

// AddPending records that the pod at addr was just sent a request whose prompt has the given
// chained block hashes: each block the pod does not hold already is pending on it until now+ttl
// or until the pod reports storing it. At most MaxPending entries are kept; the oldest go first
// (counted in Stats.PendingDropped). A pod that has published no event yet is ignored: only the
// pods the index names have entries, so a pod that left cannot be brought back.
func (x *Index) AddPending(addr string, hashes []uint64, now time.Time, ttl time.Duration) {
	if len(hashes) == 0 || ttl <= 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	id, ok := x.podIDs[addr]
	if !ok {
		return
	}
	at := now.UnixNano()
	x.expire(at)
	until := at + int64(ttl)
	for _, h := range hashes {
		if x.find(id, h) != none {
			continue // stored already: the index knows
		}
		x.addPending(pendKey{h, id}, until)
	}
}

func (x *Index) addPending(k pendKey, until int64) {
	s := &x.pend
	if s.ring == nil {
		s.ring = make([]pendRec, s.capacity)
	}
	if s.n == len(s.ring) {
		if x.popPending() {
			s.dropped++
		}
	}
	if _, ok := s.until[k]; !ok {
		x.pods[k.pod].pending++
	}
	s.until[k] = until
	s.ring[(s.start+s.n)%len(s.ring)] = pendRec{key: k, until: until}
	s.n++
}

// popPending removes the oldest record, and its key when the record is the key's newest; it
// reports whether a live key was removed.
func (x *Index) popPending() bool {
	s := &x.pend
	r := s.ring[s.start]
	s.start = (s.start + 1) % len(s.ring)
	s.n--
	if u, ok := s.until[r.key]; ok && u == r.until {
		x.unpend(r.key)
		return true
	}
	return false
}

// expire drops the records whose TTL ended by at.
func (x *Index) expire(at int64) {
	s := &x.pend
	for s.n > 0 && s.ring[s.start].until <= at {
		x.popPending()
	}
}

func (x *Index) unpend(k pendKey) {
	delete(x.pend.until, k)
	x.pods[k.pod].pending--
}

// settle ends the pending entries of blocks the pod just reported storing.
func (x *Index) settle(id uint16, hashes []uint64) {
	for _, h := range hashes {
		k := pendKey{h, id}
		if _, ok := x.pend.until[k]; ok {
			x.unpend(k)
		}
	}
}

// dropPending ends every pending entry of a pod leaving the index (a scan: pods leave seldom and
// the set is bounded), so that its id, reused, inherits none.
func (x *Index) dropPending(id uint16) {
	if x.pods[id].pending == 0 {
		return
	}
	for k := range x.pend.until {
		if k.pod == id {
			x.unpend(k)
		}
	}
}
