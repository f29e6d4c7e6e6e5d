package predictedttft

import (
	"context"
	"math"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// minLearnTokens: responses with fewer uncached prompt tokens say too little about prefill speed.
const minLearnTokens = 32

// priorRefresh: the fleet prior is recomputed every priorRefresh learned responses.
const priorRefresh = 32

// FirstToken learns prefill speed as soon as the first token arrives: TTFT minus the predicted
// wait, weighted down when requests were ahead (the wait was then uncertain) or were sent to the
// pod after it and before its first token (the engine may have prefilled them in the same steps,
// so a batch sent together does not read as a slow pod).
func (s *Scorer) FirstToken(_ context.Context, req *framework.Request, info *framework.ResponseInfo) {
	d, ok := s.pending.Take(req)
	if !ok {
		return
	}
	s.firstTokens.Store(true)
	d.batch = runningOn(d.ep)
	s.drained(&d, info)
	s.prefillDone(&d)
	s.observed(&d, info)
	if s.usable(d, info) && !d.prefillLearned {
		s.learn(d, info, 0, -1)
		d.prefillLearned = true
	}
	s.pending.Put(req, d)
}

// PostResponse learns from a successful response: prefill speed (unless FirstToken did), ITL
// from the observed mean and, with the running batch scraped at its first token and its end, how
// the pod's step time grows with its batch, and the pod's typical uncached prompt size, using the
// reported cached tokens when the server gives them.
func (s *Scorer) PostResponse(_ context.Context, req *framework.Request, info *framework.ResponseInfo) {
	d, ok := s.pending.Take(req)
	if !ok {
		return
	}
	s.prefillDone(&d)
	s.observed(&d, info)
	if !s.usable(d, info) {
		return
	}
	itl := 0.0
	if info.MeanITL > 0 && info.OutputTokens >= 2 {
		itl = info.MeanITL.Seconds()
	}
	s.learn(d, info, itl, decodeBatch(d.batch, runningOn(d.ep)))
}

// runningOn returns the running batch of e's latest scrape, or -1 before any.
func runningOn(e framework.Endpoint) float64 {
	if e == nil {
		return -1
	}
	if m := e.Metrics(); m != nil {
		return float64(max(m.Running, 0))
	}
	return -1
}

// decodeBatch is the batch a response decoded in: the mean of the running batch scraped at its
// first token and at its end, whichever are known (-1 when neither is).
func decodeBatch(atFirst, atEnd float64) float64 {
	switch {
	case atFirst >= 0 && atEnd >= 0:
		return (atFirst + atEnd) / 2
	case atFirst >= 0:
		return atFirst
	}
	return atEnd
}

// usable reports whether info is a successful answer from the endpoint the request was routed to
// (a retry on a fallback endpoint teaches nothing about either) whose client did not hold it back
// (its latencies would be the client's).
func (s *Scorer) usable(d dispatch, info *framework.ResponseInfo) bool {
	return info != nil && info.Status/100 == 2 && info.TTFT > 0 && !info.ClientStalled &&
		(info.Endpoint == nil || info.Endpoint == d.ep)
}

// prefillDone removes the request from its pod's prefill backlog, once.
func (s *Scorer) prefillDone(d *dispatch) {
	if d.prefillDone {
		return
	}
	d.prefillDone = true
	s.mu.RLock()
	st := s.pods[d.ep.Meta()]
	s.mu.RUnlock()
	if st != nil {
		st.dequeue(d.uncached)
	}
}

// drained measures, at a first token from the pod the request was sent to, how fast the pod
// works through this gateway's backlog: the request's uncached tokens over the time since its
// dispatch or the pod's previous first token, whichever is later.
func (s *Scorer) drained(d *dispatch, info *framework.ResponseInfo) {
	if d.prefillDone || d.at.IsZero() || (info != nil && info.Endpoint != nil && info.Endpoint != d.ep) {
		return
	}
	s.mu.RLock()
	st := s.pods[d.ep.Meta()]
	s.mu.RUnlock()
	if st == nil {
		return
	}
	busy := st.firstToken(d.at, s.now())
	if d.uncached >= 1 && (info == nil || !info.ClientStalled) {
		st.drained(d.uncached, busy)
	}
}

// learn folds a response into its pod's model: the prefill sample (unless the first token gave
// it), the ITL sample itl (seconds, 0 = none) observed with batch requests running (-1: unknown)
// and the request's uncached tokens.
func (s *Scorer) learn(d dispatch, info *framework.ResponseInfo, itl, batch float64) {
	s.mu.RLock()
	st := s.pods[d.ep.Meta()]
	s.mu.RUnlock()
	if st == nil {
		return
	}
	uncached := d.uncached
	if info.CachedTokens >= 0 && info.PromptTokens > 0 {
		uncached = float64(max(0, info.PromptTokens-info.CachedTokens))
	}
	sample := 0.0
	if !d.prefillLearned {
		sample = s.prefillSample(d, info, uncached)
	} else {
		uncached = -1 // already folded in at the first token
	}
	st.learn(s.cfg.Alpha, sample, 1/(1+d.ahead+st.sentAfter(d.seq)), itl, batch, uncached)
	if s.learned.Add(1)%priorRefresh == 1 {
		s.refreshPrior()
	}
}

func (s *Scorer) prefillSample(d dispatch, info *framework.ResponseInfo, uncached float64) float64 {
	busy := info.TTFT.Seconds() - s.cfg.Overhead.Seconds()
	if uncached < minLearnTokens || busy <= 0 {
		return 0
	}
	prefill := max(busy-d.wait, 0.2*busy)
	lo, hi := s.cfg.PriorPrefill/1000, s.cfg.PriorPrefill*1000
	return min(hi, max(lo, uncached/prefill))
}

// refreshPrior sets the neutral prior to the geometric mean of the measured pods.
func (s *Scorer) refreshPrior() {
	var lp, li float64
	var np, ni int
	s.mu.RLock()
	for _, st := range s.pods {
		sp := st.snap.Load()
		if sp.nPrefill > 0 {
			lp += math.Log(sp.prefill)
			np++
		}
		if sp.nITL > 0 {
			li += math.Log(sp.itl)
			ni++
		}
	}
	s.mu.RUnlock()
	p := speed{prefill: s.cfg.PriorPrefill, itl: s.cfg.PriorITL.Seconds()}
	if np > 0 {
		p.prefill = math.Exp(lp / float64(np))
	}
	if ni > 0 {
		p.itl = math.Exp(li / float64(ni))
	}
	s.prior.Store(&p)
}
