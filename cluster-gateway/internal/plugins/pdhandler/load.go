package pdhandler

import (
	"context"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Learning constants of the prefill-load model.
const (
	// speedAlpha is the weight of a new prompt in the moving average of the prompt size.
	speedAlpha = 0.25
	// speedDecay is how much of an endpoint's measured work and busy time each finished prefill
	// keeps: its speed is a ratio of exponentially decayed sums, over about the last ten prefills.
	speedDecay = 0.9
	// minSampleTokens: prefills of fewer uncached tokens say too little about an endpoint's speed.
	minSampleTokens = 64
	// minBusy is the busy time an endpoint's speed needs before it is trusted.
	minBusy = 10 * time.Millisecond
	// pendingLimit bounds the remembered prefills (two generations, see framework.PendingMap):
	// a request whose first token and response never arrive is forgotten.
	pendingLimit = 4096
)

// load is the selective handler's view of prefill work: per endpoint, the prompt tokens this
// gateway sent it to prefill (as a prefill endpoint, or as a decode endpoint prefilling itself)
// that have not produced a first token yet, and the speed at which it works through them. It
// is safe for concurrent use.
type load struct {
	prior   float64 // tokens per second assumed before any endpoint was measured
	mu      sync.Mutex
	pods    map[string]*podLoad // by address
	avg     float64             // moving average of the uncached prompt tokens routed
	pending *framework.PendingMap[work]
}

// podLoad is one endpoint's prefill backlog from this gateway and its measured speed.
type podLoad struct {
	tokens float64 // uncached prompt tokens sent to prefill, not yet done
	n      int     // prefills sent, not yet done
	// done and busy are the decayed sums of the tokens of its finished prefills and of the time
	// it was busy with prefills from this gateway; their ratio is its speed.
	done, busy float64
	mark       time.Time // start of the busy time not yet counted
}

// speed is the measured tokens per second, 0 before enough was measured.
func (p *podLoad) speed() float64 {
	if p.busy < minBusy.Seconds() {
		return 0
	}
	return p.done / p.busy
}

// work is one request's prefill: where it runs, its uncached tokens, when it was sent.
type work struct {
	addr   string
	tokens float64
	at     time.Time
}

func newLoad(prior float64) *load {
	return &load{prior: prior, pods: make(map[string]*podLoad), pending: framework.NewPendingMap[work](pendingLimit)}
}

// add records that req's prefill of tokens uncached tokens was sent to e at now.
func (l *load) add(req *framework.Request, e framework.Endpoint, tokens float64, now time.Time) {
	if old, ok := l.pending.Take(req); ok { // rescheduled: its earlier prefill is not coming
		l.done(old, now, false)
	}
	addr := e.Meta().Address
	l.mu.Lock()
	p := l.pods[addr]
	if p == nil {
		p = &podLoad{}
		l.pods[addr] = p
	}
	if p.n == 0 {
		p.mark = now // idle until now: its busy time starts with this prefill
	}
	p.tokens += tokens
	p.n++
	if l.avg == 0 {
		l.avg = tokens
	} else {
		l.avg += speedAlpha * (tokens - l.avg)
	}
	l.mu.Unlock()
	l.pending.Put(req, work{addr: addr, tokens: tokens, at: now})
}

// finish ends req's prefill at now, learning the endpoint's speed when learn is set (the first
// token arrived from the decode endpoint the request was sent to).
func (l *load) finish(req *framework.Request, now time.Time, learn bool) {
	if w, ok := l.pending.Take(req); ok {
		l.done(w, now, learn)
	}
}

// done removes w from its endpoint's backlog. When learn is set, w's tokens and the time the
// endpoint was busy since the previous prefill finished (or since it last went busy) join its
// speed's sums: engines prefill several prompts in the same steps, so two prefills finishing a
// millisecond apart must not read as one done in a millisecond, as a per-prefill rate would.
func (l *load) done(w work, now time.Time, learn bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pods[w.addr]
	if p == nil {
		return
	}
	p.tokens = max(0, p.tokens-w.tokens)
	p.n = max(0, p.n-1)
	if p.n == 0 {
		p.tokens = 0 // heal rounding drift
	}
	if !now.After(p.mark) {
		return
	}
	if learn && w.tokens >= minSampleTokens {
		p.done = p.done*speedDecay + w.tokens
		p.busy = p.busy*speedDecay + now.Sub(p.mark).Seconds()
	}
	p.mark = now
}

// forget drops the state of an endpoint that left the pool.
func (l *load) forget(addr string) {
	l.mu.Lock()
	delete(l.pods, addr)
	l.mu.Unlock()
}

// backlog is what load knows of e: the uncached tokens queued ahead of a new prefill there
// (this gateway's, plus others the endpoint reports waiting, each the size of the average
// prompt routed, or of tokens before any), and the speed e prefills at.
func (l *load) backlog(e framework.Endpoint, tokens float64) (ahead, speed float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	own, n := 0.0, 0
	if p := l.pods[e.Meta().Address]; p != nil {
		own, n, speed = p.tokens, p.n, p.speed()
	}
	if speed <= 0 {
		speed = l.fleetSpeed()
	}
	avg := l.avg
	if avg <= 0 {
		avg = tokens
	}
	others := 0
	if m := e.Metrics(); m != nil {
		queued := m.WaitingQueue
		if framework.RoleOf(e.Meta()) == framework.RolePrefill {
			queued += m.Running // a prefill endpoint's running requests are prefills
		}
		others = max(0, queued-n)
	}
	return own + float64(others)*avg, speed
}

// fleetSpeed is the mean measured speed, or the prior when no endpoint was measured. Callers
// hold mu.
func (l *load) fleetSpeed() float64 {
	sum, n := 0.0, 0
	for _, p := range l.pods {
		if v := p.speed(); v > 0 {
			sum += v
			n++
		}
	}
	if n == 0 {
		return l.prior
	}
	return sum / float64(n)
}

// PreRequest implements framework.PreRequest: a selective handler records the request's prefill
// on the endpoint that runs it, the prefill endpoint of a split or else the decode endpoint.
func (h *Handler) PreRequest(_ context.Context, req *framework.Request, res *framework.Result) {
	if h.load == nil || res == nil || len(res.Targets) == 0 || res.Disaggregation == "" {
		return
	}
	e, cs := res.Targets[0], res.State
	if res.Prefill != nil && len(res.Prefill.Targets) > 0 {
		e, cs = res.Prefill.Targets[0], res.Prefill.State
	}
	h.load.add(req, e, uncached(req, cs, e), h.now())
}

// FirstToken implements framework.FirstToken: the request's prefill is done.
func (h *Handler) FirstToken(_ context.Context, req *framework.Request, info *framework.ResponseInfo) {
	if h.load != nil {
		h.load.finish(req, h.now(), info != nil && info.Status/100 == 2 && info.TTFT > 0)
	}
}

// PostResponse implements framework.PostResponse: a request that ends without a first token
// (failed, or refused) leaves the backlog.
func (h *Handler) PostResponse(_ context.Context, req *framework.Request, _ *framework.ResponseInfo) {
	if h.load != nil {
		h.load.finish(req, h.now(), false)
	}
}

// uncached is req's prompt tokens not in e's prefix cache by the match in cs (none without one).
func uncached(req *framework.Request, cs *framework.CycleState, e framework.Endpoint) float64 {
	return float64(max(0, req.PromptTokens-framework.ReadPrefixMatch(cs).TokensFor(e)))
}
