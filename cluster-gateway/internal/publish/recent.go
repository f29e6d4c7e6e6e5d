package publish

import "sync"

// DefaultMaxBlocksPerRequest bounds the leading prefix blocks RecentPrefixes records per request:
// 256 blocks (about 4k tokens), as many as the prefix-cache scorer matches by default.
const DefaultMaxBlocksPerRequest = 256

// RecentPrefixes is a PrefixSource fed by the front door: it remembers, per base model, the
// prefix-block hashes of the prompts the gateway routed recently, up to a capacity per model.
// Recency is kept in two generations: new hashes go into the current one, and when it holds half
// the capacity it becomes the previous one and the old previous one is forgotten. Recording
// allocates nothing once a model's generations have grown. It is safe for concurrent use.
type RecentPrefixes struct {
	capacity, perRequest int
	mu                   sync.RWMutex
	models               map[string]*generations
}

// generations is one model's two-generation set of hashes.
type generations struct {
	mu        sync.Mutex
	cur, prev map[uint64]struct{}
}

var _ PrefixSource = (*RecentPrefixes)(nil)

// NewRecentPrefixes returns a recorder keeping about capacity hashes per model (at least 2) and
// recording at most perRequest leading blocks of each prompt (<= 0: DefaultMaxBlocksPerRequest).
// Set capacity to the publisher's MaxHotPrefixes.
func NewRecentPrefixes(capacity, perRequest int) *RecentPrefixes {
	if perRequest <= 0 {
		perRequest = DefaultMaxBlocksPerRequest
	}
	return &RecentPrefixes{capacity: max(capacity, 2), perRequest: perRequest, models: make(map[string]*generations)}
}

// Record notes that a prompt with the given chained block hashes (gossip/prefix) was routed to a
// pod serving base model model. Call it once per routed request; model must be a base model the
// gateway serves (body-based routing has resolved it), which bounds the models kept.
func (r *RecentPrefixes) Record(model string, hashes []uint64) {
	if len(hashes) == 0 || model == "" {
		return
	}
	hashes = hashes[:min(len(hashes), r.perRequest)]
	g := r.model(model)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(hashes) - 1; i >= 0; i-- { // the chain's head last: it is the most shared
		if len(g.cur) >= r.capacity/2 {
			g.cur, g.prev = g.prev, g.cur
			clear(g.cur)
		}
		g.cur[hashes[i]] = struct{}{}
	}
}

func (r *RecentPrefixes) model(model string) *generations {
	r.mu.RLock()
	g := r.models[model]
	r.mu.RUnlock()
	if g != nil {
		return g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g = r.models[model]; g == nil {
		g = &generations{cur: make(map[uint64]struct{}), prev: make(map[uint64]struct{})}
		r.models[model] = g
	}
	return g
}

// HotPrefixes returns up to max hashes recorded for model, the current generation's first.
func (r *RecentPrefixes) HotPrefixes(model string, max int) []uint64 {
	r.mu.RLock()
	g := r.models[model]
	r.mu.RUnlock()
	if g == nil || max <= 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]uint64, 0, min(max, len(g.cur)+len(g.prev)))
	for h := range g.cur {
		if len(out) == max {
			return out
		}
		out = append(out, h)
	}
	for h := range g.prev {
		if len(out) == max {
			break
		}
		if _, dup := g.cur[h]; !dup {
			out = append(out, h)
		}
	}
	return out
}
