// Package predictedttft provides the predicted-ttft-scorer plugin (Switchyard's). For each
// candidate it predicts this request's time to first token: the prefill work ahead of it on that
// pod (scraped queue and running batch, plus what this gateway sent since the scrape, or its
// instant in-flight count if larger; this gateway's own requests by the tokens they still have to
// prefill), then its own prompt tokens not in the pod's prefix cache, at the rate the pod has been
// measured to work through a backlog (its prefill speed when nothing is ahead), plus one engine
// step at the pod's running batch and a fixed overhead. Prefill speed, drain rate, inter-token
// latency and how the step grows with the batch are learned per pod from observed first tokens,
// TTFT, mean ITL, the scraped running batch and cached tokens; unmeasured pods get a neutral
// prior (the fleet's geometric mean, and no batch slope). Scores are best/own in (0,1], so a pod predicted twice as
// slow as the best scores 0.5.
package predictedttft

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "predicted-ttft-scorer"

func init() { framework.Register(Type, Factory) }

// Scorer is the predicted-ttft-scorer. It is safe for concurrent use.
type Scorer struct {
	name    string
	cfg     Config
	now     func() time.Time
	mu      sync.RWMutex
	pods    map[*framework.EndpointMeta]*pod
	prior   atomic.Pointer[speed]
	learned atomic.Uint64
	// firstTokens is set once the front door reports first tokens, enabling exact prefill backlog.
	firstTokens atomic.Bool
	pending     *framework.PendingMap[dispatch]
	// observe receives each prediction with the TTFT then measured (ObservePredictions).
	observe atomic.Pointer[func(predicted, measured time.Duration)]
}

// dispatch is what PreRequest predicted, kept for learning at PostResponse.
type dispatch struct {
	ep                    framework.Endpoint
	at                    time.Time // when it was sent
	ahead, wait, uncached float64
	total                 float64 // the predicted TTFT, in seconds
	seq                   uint64  // the pod's dispatch count once this request was sent
	batch                 float64 // the pod's scraped running batch at the first token (-1: none yet)
	prefillLearned        bool
	prefillDone           bool // removed from the pod's prefill backlog
	observed              bool // the prediction was handed to the observer
}

var (
	_ framework.Scorer       = (*Scorer)(nil)
	_ framework.PreRequest   = (*Scorer)(nil)
	_ framework.FirstToken   = (*Scorer)(nil)
	_ framework.PostResponse = (*Scorer)(nil)
)

// Factory builds a Scorer from Params and subscribes it to endpoint removals.
func Factory(name string, params json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	s := New(name, cfg, time.Now)
	if h != nil {
		s.now = h.Now
		h.OnRemove(func(string) { s.retain(h.Endpoints()) })
	}
	return s, nil
}

// New returns a Scorer with a validated cfg and clock now.
func New(name string, cfg Config, now func() time.Time) *Scorer {
	s := &Scorer{
		name:    name,
		cfg:     cfg,
		now:     now,
		pods:    make(map[*framework.EndpointMeta]*pod),
		pending: framework.NewPendingMap[dispatch](4096),
	}
	s.prior.Store(&speed{prefill: cfg.PriorPrefill, itl: cfg.PriorITL.Seconds()})
	return s
}

// TypedName returns the plugin's type and name.
func (s *Scorer) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: s.name}
}

// Score writes best/own predicted TTFT per endpoint.
func (s *Scorer) Score(
	_ context.Context,
	cs *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
	scores []float64,
) {
	m := framework.ReadPrefixMatch(cs)
	aligned := m != nil && len(m.Blocks) == len(eps)
	prior := s.prior.Load()
	best := math.Inf(1)
	now := s.now()
	s.mu.RLock()
	for i, e := range eps {
		cached := 0
		if aligned {
			cached = int(m.Blocks[i]) * framework.PrefixTokensPerBlock
		}
		scores[i] = s.estimate(e, s.pods[e.Meta()], prior, request{req.PromptTokens, cached, req.Adapter, now}).Total
		best = min(best, scores[i])
	}
	s.mu.RUnlock()
	for i := range scores[:len(eps)] {
		scores[i] = best / scores[i]
	}
}

// Predict returns the predicted TTFT of a request of promptTokens (cachedTokens of them in the
// pod's prefix cache) on e now, e.g. for a reference request in the gateway's capacity summary.
func (s *Scorer) Predict(e framework.Endpoint, promptTokens, cachedTokens int) time.Duration {
	s.mu.RLock()
	st := s.pods[e.Meta()]
	s.mu.RUnlock()
	est := s.estimate(e, st, s.prior.Load(), request{prompt: promptTokens, cached: cachedTokens, at: s.now()})
	return time.Duration(est.Total * float64(time.Second))
}

// Speed returns the prefill speed (prompt tokens per second) and decode speed (output tokens per
// second) the scorer assumes for e: measured where it has samples, the neutral prior elsewhere.
func (s *Scorer) Speed(e framework.Endpoint) (prefill, decode float64, ok bool) {
	s.mu.RLock()
	st := s.pods[e.Meta()]
	s.mu.RUnlock()
	sp := effective(st, s.prior.Load())
	if sp.itl <= 0 {
		return sp.prefill, 0, sp.prefill > 0
	}
	return sp.prefill, 1 / sp.itl, true
}

// ObservePredictions has f called once for every request that gets a first token from the pod it
// was sent to: with the TTFT PreRequest predicted for it and the TTFT the gateway measured (how
// well calibrated the predictions are). f must be safe for concurrent use and not block.
func (s *Scorer) ObservePredictions(f func(predicted, measured time.Duration)) { s.observe.Store(&f) }

// observed hands d's prediction and the measured TTFT to the observer, once per request.
func (s *Scorer) observed(d *dispatch, info *framework.ResponseInfo) {
	f := s.observe.Load()
	if f == nil || d.observed || d.total <= 0 || !s.usable(*d, info) {
		return
	}
	d.observed = true
	(*f)(time.Duration(d.total*float64(time.Second)), info.TTFT)
}

// PreRequest records the dispatch to Targets[0]: it counts toward the pod's load until its next
// scrape, and its prediction is kept to learn from the response.
func (s *Scorer) PreRequest(_ context.Context, req *framework.Request, res *framework.Result) {
	if res == nil || len(res.Targets) == 0 {
		return
	}
	e := res.Targets[0]
	cached := framework.ReadPrefixMatch(res.State).TokensFor(e)
	st := s.podFor(e)
	now := s.now()
	est := s.estimate(e, st, s.prior.Load(), request{req.PromptTokens, cached, req.Adapter, now})
	seq := st.dispatched(now)
	st.enqueue(est.Uncached, now)
	s.pending.Put(
		req,
		dispatch{
			ep:       e,
			at:       now,
			ahead:    est.Ahead,
			wait:     est.Wait,
			uncached: est.Uncached,
			total:    est.Total,
			seq:      seq,
			batch:    -1,
		},
	)
}

func (s *Scorer) podFor(e framework.Endpoint) *pod {
	s.mu.RLock()
	st := s.pods[e.Meta()]
	s.mu.RUnlock()
	if st != nil {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st = s.pods[e.Meta()]; st == nil {
		st = newPod()
		s.pods[e.Meta()] = st
	}
	return st
}

// retain drops the learned state of endpoints no longer in eps and recomputes the prior.
func (s *Scorer) retain(eps []framework.Endpoint) {
	keep := make(map[*framework.EndpointMeta]bool, len(eps))
	for _, e := range eps {
		keep[e.Meta()] = true
	}
	s.mu.Lock()
	for e := range s.pods {
		if !keep[e] {
			delete(s.pods, e)
		}
	}
	s.mu.Unlock()
	s.refreshPrior()
}
