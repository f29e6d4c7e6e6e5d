package kvevents

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// ResidentPrefixes is the source of the gossiped prefix sketch when the gateway follows its pods'
// KV events: the prompt-prefix hashes (gossip/prefix: 64-byte text blocks, the hashes routers
// compute) whose KV blocks a pod serving the model holds now, as the index says.
//
// Routers hash a prompt's text; pods report hashes of its token ids. The two chains do not
// translate into each other, so ResidentPrefixes learns the correspondence from the requests the
// precise-prefix-cache-scorer hashed both ways (Record): text block i, which ends at byte
// 64·(i+1), is mapped to the KV block covering the same fraction of the prompt. Only prefixes of
// prompts routed through this gateway are known, and a prefix is published only while the index
// holds its block: one evicted from every pod, or never stored (the request failed), leaves the
// sketch at the next publish. The correspondences are kept per base model in two generations of
// at most capacity/2 each, like publish.RecentPrefixes. It is safe for concurrent use.
type ResidentPrefixes struct {
	idx        *Index
	view       endpointLister
	capacity   int
	perRequest int
	attached   atomic.Bool
	mu         sync.RWMutex
	models     map[string]*translations
}

// endpointLister is the gateway's endpoint set. It must be safe for concurrent use.
type endpointLister interface {
	Endpoints() []framework.Endpoint
}

// translations is one model's text-block → KV-block correspondences, in two generations.
type translations struct {
	mu        sync.Mutex
	cur, prev map[uint64]uint64
}

// NewResidentPrefixes returns a source reading idx, counting the blocks of view's pods (only
// those serving the asked model), keeping about capacity correspondences per model (at least 2)
// and recording at most perRequest leading blocks of each prompt (at least 1).
func NewResidentPrefixes(idx *Index, view endpointLister, capacity, perRequest int) *ResidentPrefixes {
	return &ResidentPrefixes{idx: idx, view: view, capacity: max(capacity, 2), perRequest: max(perRequest, 1),
		models: make(map[string]*translations)}
}

// Attach marks the source as fed: a precise-prefix-cache-scorer will Record what it routes.
func (r *ResidentPrefixes) Attach() { r.attached.Store(true) }

// Attached reports whether a scorer called Attach. Without one nothing is recorded, and the
// gateway builds its sketch from its routing decisions instead.
func (r *ResidentPrefixes) Attached() bool { return r.attached.Load() }

// Record notes the two hash chains of a prompt routed to a pod of base model model: text, the
// gossip/prefix chain of its text (Request.PrefixHashes), and kv, the chain of its KV blocks as
// the engine hashes them. complete is false when kv stops short of the prompt (the scorer's
// block bound): text and kv then no longer cover the same prompt, and text block i is mapped to
// KV block i (64 bytes are about 16 tokens). It copies what it keeps.
func (r *ResidentPrefixes) Record(model string, text, kv []uint64, complete bool) {
	if model == "" || len(text) == 0 || len(kv) == 0 {
		return
	}
	ratio := 1.0
	if complete {
		ratio = float64(len(kv)) / float64(len(text))
	}
	n := min(len(text), r.perRequest)
	g := r.model(model)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := n - 1; i >= 0; i-- { // the chain's head last: it is the most shared
		k := max(0, int(math.Ceil(float64(i+1)*ratio-1e-9))-1)
		if k >= len(kv) {
			continue
		}
		if len(g.cur) >= r.capacity/2 {
			g.cur, g.prev = g.prev, g.cur
			clear(g.cur)
		}
		g.cur[text[i]] = kv[k]
	}
}

func (r *ResidentPrefixes) model(model string) *translations {
	r.mu.RLock()
	g := r.models[model]
	r.mu.RUnlock()
	if g != nil {
		return g
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g = r.models[model]; g == nil {
		g = &translations{cur: make(map[uint64]uint64), prev: make(map[uint64]uint64)}
		r.models[model] = g
	}
	return g
}

// HotPrefixes returns up to limit text-block hashes of model whose KV block a pod serving model
// holds, the most recently routed generation's first (publish.PrefixSource).
func (r *ResidentPrefixes) HotPrefixes(model string, limit int) []uint64 {
	r.mu.RLock()
	g := r.models[model]
	r.mu.RUnlock()
	if g == nil || limit <= 0 {
		return nil
	}
	text, kv := g.snapshot()
	eps := servingModel(r.view.Endpoints(), model)
	held := make([]bool, len(kv))
	r.idx.HeldBy(kv, eps, held)
	out := text[:0]
	for i, h := range text {
		if held[i] && len(out) < limit {
			out = append(out, h)
		}
	}
	return out
}

// snapshot copies the model's correspondences, the current generation's first.
func (g *translations) snapshot() (text, kv []uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.cur) + len(g.prev)
	text, kv = make([]uint64, 0, n), make([]uint64, 0, n)
	for t, k := range g.cur {
		text, kv = append(text, t), append(kv, k)
	}
	for t, k := range g.prev {
		if _, dup := g.cur[t]; !dup {
			text, kv = append(text, t), append(kv, k)
		}
	}
	return text, kv
}

// servingModel returns the endpoints whose base model is model.
func servingModel(eps []framework.Endpoint, model string) []framework.Endpoint {
	out := eps[:0:0]
	for _, e := range eps {
		if m := e.Models(); m != nil && m.Base == model {
			out = append(out, e)
		}
	}
	return out
}
