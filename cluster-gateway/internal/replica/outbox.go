package replica

// outbox collects the prefix routes this replica made since the last batch, bounded by bytes.
// A chain's hashes identify its whole prefix (each block's hash covers every block before it), so
// a route is cut to the blocks after those already queued for the same pod: a shared system
// prompt routed a hundred times in a batch is sent once. Callers hold the Sharer's mutex.
type outbox struct {
	limit  int
	routes []prefixRoute
	bytes  int
	queued map[string]map[uint64]struct{} // pod address -> hashes queued this batch
}

func newOutbox(limit int) *outbox {
	return &outbox{limit: limit, queued: map[string]map[uint64]struct{}{}}
}

// add queues a route; it returns false when the batch has no room left for it (dropped).
func (o *outbox) add(model, addr string, hashes []uint64) bool {
	seen := o.queued[addr]
	if seen != nil {
		hashes = hashes[queuedPrefix(seen, hashes):]
	}
	if len(hashes) == 0 {
		return true
	}
	size := prefixSize(model, addr, len(hashes))
	if o.bytes+size > o.limit {
		return false
	}
	if seen == nil {
		seen = map[uint64]struct{}{}
		o.queued[addr] = seen
	}
	for _, h := range hashes {
		seen[h] = struct{}{}
	}
	o.routes = append(o.routes, prefixRoute{model: model, addr: addr, hashes: append([]uint64(nil), hashes...)})
	o.bytes += size
	return true
}

// queuedPrefix returns how many leading hashes of a chain are queued already. What is queued
// for a pod is prefix-closed (a chain's block is queued only with every block before it), so the
// queued blocks are a leading run of the chain, found by binary search.
func queuedPrefix(seen map[uint64]struct{}, hashes []uint64) int {
	lo, hi := 0, len(hashes) // hashes[:lo] queued; hashes[hi:] not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if _, ok := seen[hashes[mid]]; ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// take returns the queued routes and empties the outbox.
func (o *outbox) take() []prefixRoute {
	r := o.routes
	o.routes, o.bytes = nil, 0
	for addr, seen := range o.queued {
		if len(seen) == 0 { // idle for a batch: let its memory go
			delete(o.queued, addr)
			continue
		}
		clear(seen) // keeps its buckets: the next batch's routes to the pod need no growth
	}
	return r
}

// memBytes estimates the outbox's memory (routes and the dedup sets).
func (o *outbox) memBytes() int {
	n := o.bytes
	for _, s := range o.queued {
		n += 16 * len(s)
	}
	return n
}
