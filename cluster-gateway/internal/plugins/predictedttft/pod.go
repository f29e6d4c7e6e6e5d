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
	// drainTokens and drainTime are decaying sums of the prefill tokens the pod finished while
	// this gateway had requests waiting for their first token, and of the time it took: their
	// ratio is how fast the pod works through a backlog (drainRate).
	drainTokens, drainTime float64
	nDrain                 int
	// fitW, fitX, fitY, fitXX and fitXY are decaying sums over responses of 1, the running batch
	// the response decoded in (x), its mean ITL (y), x² and x·y: a least-squares fit of how the
	// pod's step time grows with its batch (itlSlope).
	fitW, fitX, fitY, fitXX, fitXY float64
	nFit                           int
}

// fitDecay is the weight the batch–ITL fit keeps at each new response (about the last twenty).
const fitDecay = 0.95

// minFitSamples responses are needed before the batch–ITL slope is used.
const minFitSamples = 16

// minBatchVariance is the least variance of the observed batch sizes (in requests²) from which a
// slope is fitted: a pod always seen at about the same batch says nothing about the slope, and its
// learned ITL already holds the step time at that batch.
const minBatchVariance = 1.0

// itlSlope returns how much one more running request lengthens the pod's step, in seconds, and
// the mean batch it was fitted around; 0 until enough responses at varied batch sizes were seen.
// The slope is never negative, and never so steep that the step at an empty batch would be below
// zero.
func (s *speed) itlSlope() (slope, meanBatch float64) {
	if s.nFit < minFitSamples || s.fitW <= 0 {
		return 0, 0
	}
	mx, my := s.fitX/s.fitW, s.fitY/s.fitW
	varX := s.fitXX/s.fitW - mx*mx
	if varX < minBatchVariance {
		return 0, mx
	}
	slope = (s.fitXY/s.fitW - mx*my) / varX
	if mx > 0 {
		slope = min(slope, my/mx)
	}
	return max(slope, 0), mx
}

// step returns the expected duration of one engine step with running requests in the batch: the
// learned ITL (measured at the batch sizes the pod has been running), moved along the slope fitted
// to the pod's own (batch, ITL) observations. With no slope measured it is the learned ITL.
func (s *speed) step(running int) float64 {
	slope, mx := s.itlSlope()
	return max(0, s.itl+slope*(float64(running)-mx))
}

// drainDecay is the weight the drain sums keep at each new first token (about the last ten).
const drainDecay = 0.9

// minDrainSamples first tokens are needed before the drain rate is trusted.
const minDrainSamples = 8

// drainRate returns the measured backlog drain rate in tokens per second, or 0 when there are
// too few samples.
func (s *speed) drainRate() float64 {
	if s.nDrain < minDrainSamples || s.drainTime <= 0 {
		return 0
	}
	return s.drainTokens / s.drainTime
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
	// busySince is when (unix nanos) that backlog last went from empty to not empty, and
	// lastFirst when the latest first token of this gateway's requests to the pod arrived: the
	// pod has been working on the backlog's oldest request since the later of the two.
	busySince atomic.Int64
	lastFirst atomic.Int64
}

// resetBacklog clears the prefill backlog (the pod has nothing in flight from this gateway).
func (p *pod) resetBacklog() {
	if p.prefillN.Load() != 0 || p.prefillTokens.Load() != 0 {
		p.prefillN.Store(0)
		p.prefillTokens.Store(0)
	}
}

// enqueue adds one request of tokens, sent at now, to the pod's prefill backlog.
func (p *pod) enqueue(tokens float64, now time.Time) {
	p.prefillTokens.Add(int64(tokens))
	if p.prefillN.Add(1) == 1 {
		p.busySince.Store(now.UnixNano())
	}
}

// dequeue removes one request of tokens from the pod's prefill backlog.
func (p *pod) dequeue(tokens float64) {
	p.prefillTokens.Add(-int64(tokens))
	p.prefillN.Add(-1)
}

// minRemaining is the share of a backlog's tokens assumed still to prefill however long the pod
// has been at it: none of those requests has its first token yet.
const minRemaining = 0.1

// remaining returns how many of the backlog's tokens, n requests waiting for their first token,
// are still to prefill at now, when the pod works through them at rate tokens per second, oldest
// first (a fluid queue): requests are admitted and prefilled in chunks, so one still waiting for
// its first token may be most of the way through its prompt. Only the oldest can be that far:
// had it finished, its first token would have come, so about (n-1)/n of the tokens are left
// however long the pod has been busy (a pod whose KV cache is full admits nothing for a while).
func (p *pod) remaining(tokens, n, rate float64, now time.Time) float64 {
	if tokens <= 0 || rate <= 0 || n <= 0 {
		return max(tokens, 0)
	}
	since := max(p.busySince.Load(), p.lastFirst.Load())
	busy := max(0, float64(now.UnixNano()-since)/float64(time.Second))
	return max(tokens-rate*busy, max(minRemaining, (n-1)/n)*tokens)
}

// firstToken records the first token, at now, of a request sent at sent, and returns how long
// the pod worked on it: from the later of its dispatch and the previous first token (the pod was
// busy with older requests until then).
func (p *pod) firstToken(sent, now time.Time) time.Duration {
	at := now.UnixNano()
	prev := p.lastFirst.Load()
	for prev < at && !p.lastFirst.CompareAndSwap(prev, at) {
		prev = p.lastFirst.Load()
	}
	return max(0, now.Sub(time.Unix(0, max(prev, sent.UnixNano()))))
}

// drained folds a first token's prefill tokens and the time the pod worked on them into the
// drain rate.
func (p *pod) drained(tokens float64, busy time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.snap.Load()
	s.drainTokens = drainDecay*s.drainTokens + tokens
	s.drainTime = drainDecay*s.drainTime + busy.Seconds()
	s.nDrain++
	p.snap.Store(&s)
}

func newPod() *pod {
	p := &pod{}
	p.snap.Store(&speed{})
	return p
}

// dispatched records a request sent to the pod at now and returns the pod's dispatch count with
// it.
func (p *pod) dispatched(now time.Time) uint64 {
	n := p.count.Add(1)
	p.ring[(n-1)%dispatchRing].Store(now.UnixNano())
	return n
}

// sentAfter returns how many requests were sent to the pod after the one whose dispatch count
// was seq.
func (p *pod) sentAfter(seq uint64) float64 {
	n := p.count.Load()
	return float64(n - min(seq, n))
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
// weight in (0,1]; itlSample is seconds (0 = none), observed with batch requests running (< 0:
// unknown); uncached is the request's uncached tokens.
func (p *pod) learn(alpha, prefillSample, weight, itlSample, batch, uncached float64) {
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
		if batch >= 0 {
			s.fitW = fitDecay*s.fitW + 1
			s.fitX = fitDecay*s.fitX + batch
			s.fitY = fitDecay*s.fitY + itlSample
			s.fitXX = fitDecay*s.fitXX + batch*batch
			s.fitXY = fitDecay*s.fitXY + batch*itlSample
			s.nFit++
		}
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
