package predictedttft

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// speed is a pod's learned model, published as an immutable snapshot for lock-free reads.
type speed struct {
	prefill     float64 // prompt tokens per second
	itl         float64 // seconds per output token
	avgUncached float64 // EWMA of uncached prompt tokens of requests sent to the pod
	nPrefill    int
	nITL        int
}

// dispatchRing is the size of the per-pod ring of recent dispatch times.
const dispatchRing = 32

// pod is one endpoint's learned state. Reads (snapshot, sentSince) are lock-free.
type pod struct {
	mu    sync.Mutex // serialises learning updates
	snap  atomic.Pointer[speed]
	ring  [dispatchRing]atomic.Int64 // unix nanos of recent dispatches
	count atomic.Uint64              // dispatches so far
	// prefillTokens and prefillN are the uncached tokens and count of this gateway's requests
	// to the pod still waiting for their first token (tracked once FirstToken hooks arrive).
	prefillTokens atomic.Int64
	prefillN      atomic.Int64
}

// resetBacklog clears the prefill backlog (the pod has nothing in flight from this gateway).
func (p *pod) resetBacklog() {
	if p.prefillN.Load() != 0 || p.prefillTokens.Load() != 0 {
		p.prefillN.Store(0)
		p.prefillTokens.Store(0)
	}
}

// queued adds (sign +1) or removes (-1) one request of tokens from the pod's prefill backlog.
func (p *pod) queued(sign int64, tokens float64) {
	p.prefillTokens.Add(sign * int64(tokens))
	p.prefillN.Add(sign)
}

func newPod() *pod {
	p := &pod{}
	p.snap.Store(&speed{})
	return p
}

// dispatched records a request sent to the pod at now.
func (p *pod) dispatched(now time.Time) {
	n := p.count.Add(1) - 1
	p.ring[n%dispatchRing].Store(now.UnixNano())
}

// sentSince counts the recorded dispatches after t (at most the ring's size).
func (p *pod) sentSince(t time.Time) int {
	total := p.count.Load()
	lim := t.UnixNano()
	n := 0
	for n < dispatchRing && uint64(n) < total {
		if p.ring[(total-1-uint64(n))%dispatchRing].Load() <= lim {
			break
		}
		n++
	}
	return n
}

// learn folds one response into the pod's model. prefillSample is tokens/s (0 = none) with its
// weight in (0,1]; itlSample is seconds (0 = none); uncached is the request's uncached tokens.
func (p *pod) learn(alpha, prefillSample, weight, itlSample, uncached float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.snap.Load()
	if prefillSample > 0 {
		a := max(1/float64(s.nPrefill+1), alpha) * weight
		s.prefill = logEWMA(s.prefill, prefillSample, a)
		s.nPrefill++
	}
	if itlSample > 0 {
		a := max(1/float64(s.nITL+1), alpha)
		s.itl = logEWMA(s.itl, itlSample, a)
		s.nITL++
	}
	if uncached >= 0 {
		s.avgUncached = ewma(s.avgUncached, uncached, alpha)
	}
	p.snap.Store(&s)
}

// logEWMA averages in log space (speeds are ratios); old == 0 means no value yet.
func logEWMA(old, sample, a float64) float64 {
	if old <= 0 {
		return sample
	}
	return math.Exp((1-a)*math.Log(old) + a*math.Log(sample))
}

func ewma(old, sample, a float64) float64 {
	if old <= 0 {
		return sample
	}
	return (1-a)*old + a*sample
}
