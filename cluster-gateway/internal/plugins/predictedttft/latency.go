package predictedttft

import (
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// PredictLatency returns the predicted time to first token and time per output token of a
// request of promptTokens (cachedTokens of them in the pod's prefix cache) sent to e now. The
// TTFT is Predict's. The TPOT is one engine step of the learned model at the batch the request
// will decode in: the pod's load (scraped waiting and running, plus what this gateway sent since
// the scrape, or its in-flight count if larger) and the request itself, along the batch slope
// fitted to the pod's own responses (the learned ITL where no slope is measured yet).
func (s *Scorer) PredictLatency(e framework.Endpoint, promptTokens, cachedTokens int) (ttft, tpot time.Duration) {
	s.mu.RLock()
	st := s.pods[e.Meta()]
	s.mu.RUnlock()
	prior := s.prior.Load()
	est := s.estimate(e, st, prior, request{prompt: promptTokens, cached: cachedTokens, at: s.now()})
	sp := effective(st, prior)
	return seconds(est.Total), seconds(sp.step(batchWith(e, st)))
}

// batchWith is the running batch on e once one more request joins it.
func batchWith(e framework.Endpoint, st *pod) int {
	load := 0
	if m := e.Metrics(); m != nil {
		load = m.WaitingQueue + m.Running
		if st != nil {
			load += st.sentSince(m.ScrapedAt)
		}
		if pl, ok := e.(framework.PeerLoad); ok {
			load += int(pl.PeerInFlightSinceScrape())
		}
	}
	return max(load, int(e.InFlight())) + 1
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
