package predictedttft

import (
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Estimate is a predicted time to first token on one endpoint, in seconds, with its parts.
type Estimate struct {
	// Ahead is the number of requests expected to prefill before this one.
	Ahead float64
	// Wait is the expected wait before this request's prefill: the prefill of those ahead plus
	// one engine step at the pod's running batch.
	Wait float64
	// Uncached is this request's prompt tokens not expected in the pod's prefix cache.
	Uncached float64
	// Total is Overhead + Wait + Uncached / prefill speed.
	Total float64
}

// defaultPromptTokens sizes queued requests when neither the pod's history nor the request
// tells their length.
const defaultPromptTokens = 256

// estimate predicts the request's TTFT on e. Load is the larger of the scrape (waiting + running,
// plus what this gateway and its peer replicas sent since the scrape) and the in-flight count
// (this gateway's and its peers', framework.PeerLoad), so a burst is seen at once, before the next
// scrape; running requests are already past prefill, the rest
// are ahead of this request. Once first-token reports arrive, this gateway's own requests ahead
// are counted by the uncached tokens they still have to prefill (a fluid queue drained at the
// pod's measured drain rate; by their whole prompts until that rate is measured), and only the
// others by the pod's average. A pod with requests ahead works through them, and then this
// request, at its measured drain rate, which includes the decode work of the running batch that
// shares every engine step, but never faster than its learned prefill speed, at which an idle
// pod prefills.
func (s *Scorer) estimate(e framework.Endpoint, st *pod, prior *speed, req request) Estimate {
	sp := effective(st, prior)
	m := e.Metrics()
	avg := sp.avgUncached
	if avg <= 0 {
		avg = float64(max(req.prompt, defaultPromptTokens))
	}
	rate, drain := sp.prefill, 0.0
	if d := sp.drainRate(); d > 0 {
		rate = min(d, sp.prefill) // a pod with work ahead is never assumed faster than an idle one
		drain = rate
	}
	ahead, queuedTokens := s.backlog(e, st, m, avg, drain, req.at)
	if ahead <= 0 {
		rate = sp.prefill
	}
	running := 0
	if m != nil {
		running = m.Running
	}
	uncached := float64(max(0, req.prompt-req.cached))
	step := sp.step(running)
	wait := queuedTokens/rate + step + s.adapterWait(req.adapter, m)
	return Estimate{Ahead: ahead, Wait: wait, Uncached: uncached, Total: s.cfg.Overhead.Seconds() + wait + uncached/rate}
}

// backlog returns the requests ahead of a new one on e at now and their prefill tokens; avg
// sizes the requests whose size is unknown, and the pod works through this gateway's own at drain
// tokens per second (0: not measured yet, so none of their tokens is assumed done: with a guessed
// rate, a slow pod's backlog would melt on paper and draw more requests).
func (s *Scorer) backlog(
	e framework.Endpoint,
	st *pod,
	m *framework.Metrics,
	avg, drain float64,
	now time.Time,
) (ahead, tokens float64) {
	waiting, running, sent := 0, 0, 0
	if m != nil {
		waiting, running = m.WaitingQueue, m.Running
		if st != nil {
			sent = st.sentSince(m.ScrapedAt)
		}
	}
	inFlight := e.InFlight()
	peer := peerLoad(e, avg)
	own := inFlight - peer.Requests // this gateway's own requests: the ones st accounts for
	if st != nil && own <= 0 {
		st.resetBacklog() // idle: heal any drift from requests whose hooks never came
	}
	if st != nil && s.firstTokens.Load() && inFlight > 0 {
		ours := float64(min(max(0, st.prefillN.Load()), max(0, own)))
		theirs := float64(peer.Prefilling)
		others := max(0, float64(waiting+sent)+peer.sinceScrape-ours-theirs)
		mine := float64(max(0, st.prefillTokens.Load()))
		if ours > 0 {
			mine = st.remaining(mine, ours, drain, now)
		}
		return ours + theirs + others, mine + theirs*peer.size + others*avg
	}
	load := max(waiting+running+sent+int(peer.sinceScrape), int(inFlight))
	ahead = float64(load - min(running, load))
	return ahead, ahead * avg
}

// peers is what peer gateway replicas have in flight to a pod, as the model counts it.
type peers struct {
	framework.InFlightLoad
	// size is the prefill tokens to count each of their requests at: the pod's average uncached
	// prompt, or the peers' average prompt when smaller (a request's uncached part is never more
	// than its prompt).
	size float64
	// sinceScrape is how many requests they sent since the newest scrape, which the scraped
	// queue cannot show yet.
	sinceScrape float64
}

// peerLoad returns what peer replicas have in flight to e (framework.PeerLoad; zeros for an
// endpoint without peers); avg is the pod's average uncached prompt.
func peerLoad(e framework.Endpoint, avg float64) peers {
	pl, ok := e.(framework.PeerLoad)
	if !ok {
		return peers{size: avg}
	}
	p := peers{InFlightLoad: pl.PeerInFlight(), size: avg, sinceScrape: float64(pl.PeerInFlightSinceScrape())}
	if p.Prefilling > 0 && p.PrefillTokens > 0 {
		p.size = min(avg, float64(p.PrefillTokens)/float64(p.Prefilling))
	}
	return p
}

// request is what the model needs of the request being placed.
type request struct {
	prompt, cached int
	adapter        string
	at             time.Time // when it is placed
}

// adapterWait is the expected LoRA load time on a pod where the adapter is not active: one load,
// or two when every slot is taken (the request first waits for a slot to free).
func (s *Scorer) adapterWait(adapter string, m *framework.Metrics) float64 {
	if adapter == "" || m == nil || slices.Contains(m.ActiveAdapters, adapter) {
		return 0
	}
	load := s.cfg.AdapterLoad.Seconds()
	if m.MaxLoRA > 0 && len(m.ActiveAdapters)+len(m.WaitingAdapters) >= m.MaxLoRA {
		return 2 * load
	}
	return load
}

// effective fills what the pod has not measured yet from the neutral prior.
func effective(st *pod, prior *speed) speed {
	if st == nil {
		return *prior
	}
	sp := *st.snap.Load()
	if sp.nPrefill == 0 {
		sp.prefill = prior.prefill
	}
	if sp.nITL == 0 {
		sp.itl = prior.itl
	}
	return sp
}
