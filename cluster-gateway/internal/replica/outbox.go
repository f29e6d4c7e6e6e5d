package replica

// outbox collects the prefix routes this replica made since the last batch, bounded by bytes.
// A chain's hashes identify its whole prefix (each block's hash covers every block before it), so
// a route is cut to the blocks after the last one already queued for the same pod: a shared
// system prompt routed a hundred times in a batch is sent once. Callers hold the Sharer's mutex.
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
	for k := len(hashes) - 1; k >= 0 && seen != nil; k-- {
		if _, ok := seen[hashes[k]]; ok {
			hashes = hashes[k+1:]
			break
		}
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

// take returns the queued routes and empties the outbox.
func (o *outbox) take() []prefixRoute {
	r := o.routes
	o.routes, o.bytes = nil, 0
	clear(o.queued)
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
