package routing

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

// Fallback figures used when a summary does not carry them.
const (
	defaultPrefillTokensPerSec = 5000
	defaultServiceTime         = time.Second
)

// Explanation says what Decide made of one cluster; ExplainRoute returns these.
type Explanation struct {
	Cluster, Region string
	// Eligible is true when the cluster could take the request at all.
	Eligible bool
	// Chosen is true for the cluster the request goes to first.
	Chosen bool
	// Estimate is the estimated time to first token (0 when not eligible).
	Estimate time.Duration
	// Utilization is the cluster's load used against the overflow threshold.
	Utilization float64
	// Reason is why the cluster was chosen, passed over or ineligible; Reason.Text is the short
	// human explanation ExplainRoute shows.
	Reason contract.Reason

	// prefill is the part of Estimate that is the prefill of this request's own uncached prompt.
	prefill time.Duration
}

// Decision is the outcome of Decide.
type Decision struct {
	// Route is local when the chosen cluster is in the router's region, else overflow.
	Route Route
	// Targets are indexes into the input clusters: the chosen one first, then up to three fallbacks in order of
	// preference (used for retries).
	Targets []int
	// Explain has one entry per input cluster, in input order.
	Explain []Explanation
	// Best is the index of the lowest estimate among the clusters the choice was made from (power-of-d
	// may choose a near-best one instead); -1 when there was no choice.
	Best int
	// NearBest is the highest estimate that counted as near the best.
	NearBest time.Duration
	// LeftBecause says, for a request routed out of the router's region, why no local cluster
	// kept it (a reason of contract.UseLeftRegion); empty otherwise.
	LeftBecause contract.Reason
	// HandBack, when above zero, is the offer the router makes to the chosen cluster: the time to
	// first token, as the cluster's gateway would predict it (round trip left out), above which
	// the gateway should hand the request back so that it goes elsewhere. It is made for a busy
	// local cluster kept (see handBack), whose summary may lag a burst, when Targets has a
	// fallback: the limit of the local-first rule that would have passed it over, checked against
	// the gateway's own, fresher prediction.
	HandBack time.Duration

	// Session is true when the chosen cluster is the one that served the request's session last,
	// kept for session affinity (Request.SessionCluster) rather than drawn.
	Session bool

	// remote and common are choosePool's best estimate elsewhere (-1: none) and least prefill;
	// commonUsed is true when an eligible local cluster is backlogged (the throughput rule or the
	// hand-back offer may read common). pool is what the choice was made among (after
	// meetingSLO) and local whether it was the router's region's clusters. Covers reads them.
	remote, common time.Duration
	commonUsed     bool
	local          bool
	pool           []int
}

// leftOrder ranks why a request left the router's region (Decision.LeftBecause), from the
// farthest from keeping it to the nearest: no local cluster serves the model; every local one is
// unavailable (drained, stale, unhealthy, saturated or without ready pods); over the policy's
// overflow threshold; busy, and elsewhere LocalPreference times sooner; this router's streams
// queue there for a first token. The reason is that of the local cluster nearest to keeping it.
var leftOrder = [...]contract.Reason{contract.ReasonNoLocal, contract.ReasonUnavailable,
	contract.ReasonOverThreshold, contract.ReasonMissesSLO, contract.ReasonRemoteSooner, contract.ReasonPastThroughput}

// Estimate returns the estimated time to first token of req on c: round trip, plus the gateway's
// predicted wait for a request with nothing to prefill (or, without one, the queue's drain time),
// plus the extra wait of this router's requests sent since the summary, plus prefill of the prompt
// tokens the cluster does not cache. The requests sent since the summary bring the prefill of
// their prompt tokens (each counts as one more prompt like this one when their lengths are
// unknown). That work fills the best pod up to the mean level of the others before it spreads
// over all of them (when the summary carries the mean; evenly over the pods otherwise), as the
// gateway's scheduler sends each request to its best pod. On a saturated cluster (new requests
// queue) each adds one more service time instead. The wait is at least the prefill of this
// router's requests still waiting there for their first token.
func Estimate(c *Cluster, req Request) time.Duration {
	start, prefill := estimate(c, req)
	return start + prefill
}

// estimate returns Estimate in two parts: the time until the cluster starts on the request (round
// trip and wait) and the prefill of its uncached prompt.
func estimate(c *Cluster, req Request) (start, prefill time.Duration) {
	rate := c.PrefillTokensPerSec
	if rate <= 0 {
		rate = defaultPrefillTokensPerSec
	}
	svc := c.ServiceTime
	if svc <= 0 {
		svc = defaultServiceTime
	}
	pods := max(c.ReadyPods, 1)
	wait := c.BaseTTFT
	if wait <= 0 { // no prediction in the summary: the queue drains at one request per slot
		wait = time.Duration(int64(svc) * int64(c.Queue) / int64(pods))
	}
	uncached := max(req.PromptTokens-c.CachedPrefixTokens, 0)
	prefill = seconds(float64(uncached) / rate)
	tokens := func(n int, tokens int64) float64 { // the prompt tokens of n requests
		if tokens > 0 {
			return float64(tokens)
		}
		return float64(n) * float64(req.PromptTokens)
	}
	var waited time.Duration
	if c.SaturatedFraction >= 1 {
		waited = wait + time.Duration(int64(svc)*int64(c.InFlight)/int64(pods))
	} else {
		waited = fill(wait, c.MeanTTFT, c.ReadyPods, c.SaturatedFraction, rate, tokens(c.InFlight, c.InFlightTokens))
	}
	waited = drained(waited, waited-wait, c.SummaryAge, c.InFlightAge, c.StepTime)
	// The requests this router has waiting there for a first token are a backlog the cluster
	// must prefill first, whatever the summary (which may predate them) says.
	backlog := seconds(tokens(c.Waiting, c.WaitingTokens) / rate / float64(pods))
	if c.SaturatedFraction >= 1 {
		backlog = time.Duration(int64(svc) * int64(c.Waiting) / int64(pods))
	}
	return c.RTT + max(waited, backlog), prefill
}

// drained returns a wait predicted age ago, with the work sent since (sent of it, the oldest of
// which sentAge ago), as it stands now: a pod with work ahead of it works through it all the
// while, so age of the whole is gone, but of the work sent since no more than sentAge (the pod
// may have been idle until it came: a fluid queue's bound), and never below one step (or the
// whole wait, if it was less than a step). The router's own streams still waiting there
// (Cluster.Waiting), known exactly, bound the wait from below as well.
func drained(wait, sent, age, sentAge, step time.Duration) time.Duration {
	if age <= 0 {
		return wait
	}
	return max(wait-age, sent-min(sentAge, age), min(wait, step))
}

// fill returns the wait on a cluster whose best pod waits best and its unsaturated pods mean on
// average, once work more prompt tokens have reached it at rate tokens/s per pod: the best pod
// takes them until it is at the others' level, then the pods share them evenly. The others' level
// comes from the mean over the unsaturated pods (ready × (1 − saturated)); with fewer than two of
// them, or no mean, the work is spread evenly over every ready pod from the start.
func fill(best, mean time.Duration, ready int, saturated, rate, work float64) time.Duration {
	pods := max(ready, 1)
	spread := func(from time.Duration, tokens float64) time.Duration {
		return from + seconds(tokens/rate/float64(pods))
	}
	n := int(math.Round(float64(ready) * (1 - saturated)))
	if mean <= best || n < 2 {
		return spread(best, work)
	}
	others := best + time.Duration(float64(mean-best)*float64(n)/float64(n-1)) // the others' mean
	if room := (others - best).Seconds() * rate; work > room {
		return spread(others, work-room)
	}
	return best + seconds(work/rate)
}

// seconds converts a number of seconds to a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// handBack returns the offer for a local cluster c chosen while remote was the best estimate
// elsewhere (-1: none) and common the least prefill: the limit of the rule of choosePool that
// would have passed c over, throughputLimit past its throughput, preferenceLimit when busy;
// idle, none (an idle local cluster keeps its traffic). The round trip to c is taken off, since
// the gateway predicts from where it stands.
func handBack(c *Cluster, remote, common time.Duration, opt Options) time.Duration {
	var limit float64
	switch {
	case remote < 0:
		return 0
	case backlogged(c, opt.BacklogPerPod):
		limit = throughputLimit(remote, common, opt)
	case busy(c):
		limit = preferenceLimit(remote, opt)
	default:
		return 0
	}
	return max(time.Duration(math.Round(limit))-c.RTT, time.Millisecond)
}

// throughputLimit is the estimate (in nanoseconds) above which a local cluster past its
// throughput is passed over for one elsewhere whose estimate is remote: the time to start,
// estimate less common (the least prefill, the same everywhere), widened by the near-best
// window.
func throughputLimit(remote, common time.Duration, opt Options) float64 {
	return float64(common) + float64(remote-common)*(1+opt.NearBest)
}

// preferenceLimit is the estimate (in nanoseconds) above which a busy local cluster is passed
// over for one elsewhere whose estimate is remote: LocalPreference times it.
func preferenceLimit(remote time.Duration, opt Options) float64 {
	return float64(remote) * max(opt.LocalPreference, 1)
}

// Decide chooses a cluster for req among clusters for a router in region. rng may be nil (the
// global source is used then). It returns ErrNoCandidate, ErrNotAllowed or ErrNoRoom, with the
// explanation still filled, when nothing can take the request.
func Decide(region string, clusters []Cluster, pol Policy, req Request, opt Options, rng *rand.Rand) (Decision, error) {
	d := Decision{Explain: make([]Explanation, len(clusters)), Best: -1}
	// One buffer for the eligible clusters and for the pool chosen among them: no growth.
	idx := make([]int, 2*len(clusters))
	eligible, scratch := idx[:0:len(clusters)], idx[len(clusters):len(clusters)]
	serving, allowed := 0, 0
	for i := range clusters {
		c := &clusters[i]
		e := &d.Explain[i]
		e.Cluster, e.Region = c.Name, c.Region
		e.Utilization = c.Utilization(req.AvgTokens)
		e.Reason = ineligibleReason(c, pol, e.Utilization)
		if opt.LocalOnly && c.Region != region && e.Reason == "" {
			e.Reason = contract.ReasonLocalOnly
		}
		if c.Serves || c.Lists {
			serving++
			if regionAllowed(pol, c.Region) {
				allowed++
			}
		}
		if e.Reason != "" {
			continue
		}
		e.Eligible = true
		start, prefill := estimate(c, req)
		e.Estimate, e.prefill = start+prefill, prefill
		eligible = append(eligible, i)
	}
	switch {
	case serving == 0:
		return d, ErrNoCandidate
	case allowed == 0:
		return d, ErrNotAllowed
	case len(eligible) == 0:
		return d, ErrNoRoom
	}
	if opt.Spillover && !opt.LocalOnly {
		return spillover(region, clusters, pol, opt, eligible, scratch, rng, d)
	}
	pool, route := choosePool(region, clusters, pol, req, opt, eligible, scratch, &d)
	if len(pool) == 0 {
		return d, ErrNoRoom
	}
	pool = meetingSLO(pool, req, d.Explain)
	d.pool, d.local = pool, route == contract.ReasonChosenLocal
	var left contract.Reason
	if route == contract.ReasonChosenOverflow {
		left = leftBecause(region, clusters, d.Explain)
	}
	chosen := powerOfD(pool, d.Explain, opt, rng, &d)
	reason := route
	if s := sessionChoice(pool, clusters, d.Explain, d.Best, req.SessionCluster, opt); s >= 0 {
		if s != chosen {
			d.Explain[chosen].Reason = contract.ReasonSessionElsewhere
		}
		chosen, reason, d.Session = s, contract.ReasonChosenSession, true
	} else if r := returningShare(pool, clusters, rng); r >= 0 && r != chosen {
		d.Explain[chosen].Reason = contract.ReasonYielded
		chosen, reason = r, returningReason(route)
	}
	d.Explain[chosen].Chosen = true
	d.Explain[chosen].Reason = reason
	d.Targets = orderTargets(chosen, pool, eligible, d.Explain)
	switch {
	case clusters[chosen].Region != region:
		d.Route, d.LeftBecause = RouteOverflow, left
	case len(d.Targets) > 1: // an offer only with somewhere else to go
		d.Route, d.HandBack = RouteLocal, handBack(&clusters[chosen], d.remote, d.common, opt)
	default:
		d.Route = RouteLocal
	}
	return d, nil
}

// ineligibleReason returns why c cannot take the request at all, or "".
func ineligibleReason(c *Cluster, pol Policy, util float64) contract.Reason {
	switch {
	case !c.Serves && c.Lists:
		return contract.ReasonNoReadyPods
	case !c.Serves:
		return contract.ReasonNotServed
	case !regionAllowed(pol, c.Region):
		return contract.ReasonRegionNotAllowed
	case c.Drained:
		return contract.ReasonDrained
	case c.Stale:
		return contract.ReasonStale
	case c.Unhealthy:
		return contract.ReasonUnhealthy
	case c.ReadyPods <= 0:
		return contract.ReasonNoReadyPods
	case util >= 1:
		return contract.ReasonSaturated
	}
	return ""
}

// returningReason is the chosen reason route for a cluster drawn as a returning cluster's share.
func returningReason(route contract.Reason) contract.Reason {
	if route == contract.ReasonChosenLocal {
		return contract.ReasonChosenLocalReturning
	}
	return contract.ReasonChosenOverflowReturning
}

func regionAllowed(pol Policy, region string) bool {
	return len(pol.AllowedRegions) == 0 || slices.Contains(pol.AllowedRegions, region)
}

// busy reports whether c has work waiting: a queue, or as many requests in flight from this
// router since its last summary as it has pods.
func busy(c *Cluster) bool { return c.Queue > 0 || c.InFlight >= max(c.ReadyPods, 1) }

// backlogged reports whether this router's requests arrive at c faster than it prefills them:
// at least perPod of them per ready pod wait there for their first token.
func backlogged(c *Cluster, perPod float64) bool {
	return perPod > 0 && float64(c.Waiting) >= perPod*float64(max(c.ReadyPods, 1))
}

// choosePool returns the clusters the choice is made among: the router's own region's clusters
// that have room when there are any, else every eligible cluster within the per-region overflow
// cap. A local cluster has room while it is under the overflow threshold, while it is not past
// its throughput with a cluster elsewhere estimated sooner beyond the near-best window
// (opt.BacklogPerPod of this router's requests per pod wait there for a first token; a local
// cluster still near the best keeps its traffic, so a fleet whose clusters an overflow has made
// equally slow does not send a steady region's requests away on noise), and, once it is busy (requests queued, or at
// least one in flight per pod), while no cluster elsewhere is estimated to answer
// opt.LocalPreference times sooner: an idle local cluster keeps its traffic even when a faster
// GPU generation sits elsewhere. It records why the others were passed over. The pool is built in
// buf (which needs room for every eligible cluster) in the order of eligible.
func choosePool(
	region string,
	clusters []Cluster,
	pol Policy,
	req Request,
	opt Options,
	eligible, buf []int,
	d *Decision,
) ([]int, contract.Reason) {
	capped := func(i int) bool {
		c := &clusters[i]
		return c.Region != region && pol.OverflowCap > 0 && c.RegionOverflowInFlight >= pol.OverflowCap
	}
	remote := time.Duration(-1) // the best estimate outside the region
	// The throughput rule compares clusters on what differs between them: the prefill of the
	// prompt that every cluster would need (the least among them) is left out, so in a burst a
	// long prompt, whose own prefill would dwarf any wait, leaves like a short one. The
	// LocalPreference margin, the steady-state preference for home, compares whole estimates.
	common := time.Duration(-1)
	for _, i := range eligible {
		e := &d.Explain[i]
		if clusters[i].Region != region && !capped(i) && (remote < 0 || e.Estimate < remote) {
			remote = e.Estimate
		}
		if common < 0 || e.prefill < common {
			common = e.prefill
		}
	}
	d.remote, d.common = remote, common
	startsSooner := func(e *Explanation) bool { // remote starts sooner beyond the near-best window
		return remote >= 0 && float64(e.Estimate) > throughputLimit(remote, common, opt)
	}
	sooner := func(e *Explanation) bool { // remote answers LocalPreference times sooner
		return remote >= 0 && float64(e.Estimate) > preferenceLimit(remote, opt)
	}
	// A request with its own TTFT objective leaves a local cluster estimated to miss it when a
	// cluster elsewhere is estimated to meet it.
	missesSLO := func(e *Explanation) bool {
		return req.TTFTSLO > 0 && remote >= 0 && remote <= req.TTFTSLO && e.Estimate > req.TTFTSLO
	}
	local := buf[:0]
	for _, i := range eligible {
		e := &d.Explain[i]
		if clusters[i].Region == region && backlogged(&clusters[i], opt.BacklogPerPod) {
			d.commonUsed = true
		}
		switch {
		case clusters[i].Region != region:
		case e.Utilization >= pol.OverflowThreshold:
			e.Reason = contract.ReasonOverThreshold
		case missesSLO(e):
			e.Reason = contract.ReasonMissesSLO
		case backlogged(&clusters[i], opt.BacklogPerPod) && startsSooner(e):
			e.Reason = contract.ReasonPastThroughput
		case busy(&clusters[i]) && sooner(e):
			e.Reason = contract.ReasonRemoteSooner
		default:
			local = append(local, i)
		}
	}
	if len(local) > 0 {
		for _, i := range eligible {
			if clusters[i].Region != region {
				d.Explain[i].Reason = contract.ReasonLocalHasRoom
			}
		}
		return local, contract.ReasonChosenLocal
	}
	pool := buf[:0]
	for _, i := range eligible {
		if capped(i) {
			d.Explain[i].Reason = contract.ReasonOverflowCap
			continue
		}
		pool = append(pool, i)
	}
	return pool, contract.ReasonChosenOverflow
}

// leftBecause names why no local cluster kept a request, from the local clusters' reasons as
// choosePool left them: the one nearest to keeping it (leftOrder).
func leftBecause(region string, clusters []Cluster, ex []Explanation) contract.Reason {
	return leftOrder[leftRank(region, clusters, ex)]
}

// leftRank is leftBecause's position in leftOrder.
func leftRank(region string, clusters []Cluster, ex []Explanation) int {
	best := 0
	for i := range clusters {
		if clusters[i].Region != region || (!clusters[i].Serves && !clusters[i].Lists) {
			continue
		}
		r := 1 // unavailable: any other reason
		if k := slices.Index(leftOrder[2:], ex[i].Reason); k >= 0 {
			r = 2 + k
		}
		best = max(best, r)
	}
	return best
}

// powerOfD samples opt.D distinct candidates among the near-best of pool and returns the one with
// the lowest estimate. Near-best: within opt.NearBest of the best estimate, at most opt.MaxChoices.
func powerOfD(pool []int, ex []Explanation, opt Options, rng *rand.Rand, d *Decision) int {
	d.Best = pool[0]
	for _, i := range pool[1:] {
		if ex[i].Estimate < ex[d.Best].Estimate {
			d.Best = i
		}
	}
	limit := time.Duration(float64(ex[d.Best].Estimate) * (1 + opt.NearBest))
	d.NearBest = limit
	var buf [8]int
	near := smallest(
		buf[:0],
		pool,
		ex,
		min(max(opt.MaxChoices, 1), len(buf)),
		func(i int) bool { return ex[i].Estimate <= limit },
	)
	for _, i := range pool {
		ex[i].Reason = contract.ReasonNotNearBest
	}
	pick := near[0]
	if len(near) > 1 {
		// D distinct samples (a partial Fisher-Yates shuffle of near), the lowest estimate wins:
		// with as many samples as near-best candidates, the best is always taken.
		pick = -1
		for n := range min(max(opt.D, 1), len(near)) {
			k := n + intN(rng, len(near)-n)
			near[n], near[k] = near[k], near[n]
			if i := near[n]; pick < 0 || ex[i].Estimate < ex[pick].Estimate {
				pick = i
			}
		}
	}
	for _, i := range near {
		ex[i].Reason = contract.ReasonNotDrawn
	}
	return pick
}

// sessionChoice returns the member of pool named session (the cluster that served the request's
// session last) when its estimate, less the prefill of the prompt its cache holds, is at most the
// best's × (1 + opt.SessionSlack) + opt.SessionFloor, else -1.
func sessionChoice(pool []int, clusters []Cluster, ex []Explanation, best int, session string, opt Options) int {
	if session == "" || opt.SessionSlack < 0 {
		return -1
	}
	for _, i := range pool {
		if clusters[i].Name == session {
			own := float64(ex[i].Estimate - ex[i].prefill)
			if own <= float64(ex[best].Estimate)*(1+opt.SessionSlack)+float64(opt.SessionFloor) {
				return i
			}
			return -1
		}
	}
	return -1
}

// returningShare draws whether the request goes to a returning cluster of pool (Cluster.Returning)
// whatever the estimates: one member of pool drawn uniformly, taken when it is returning, so each
// returning cluster with probability 1/len(pool). It returns the cluster, or -1. No draw is made
// when none is returning.
func returningShare(pool []int, clusters []Cluster, rng *rand.Rand) int {
	if !slices.ContainsFunc(pool, func(i int) bool { return clusters[i].Returning }) {
		return -1
	}
	if i := pool[intN(rng, len(pool))]; clusters[i].Returning {
		return i
	}
	return -1
}

// smallest appends to dst up to k members of idx that pass keep and are not in dst already, in
// increasing order of estimate (ties by position), in one pass over idx keeping the k best so far:
// O(len(idx)), with k small, and keep is asked only about members that would make the cut.
func smallest(dst, idx []int, ex []Explanation, k int, keep func(int) bool) []int {
	start := len(dst)
	if start >= k {
		return dst
	}
	for _, i := range idx {
		full := len(dst) == k
		if full && ex[i].Estimate >= ex[dst[k-1]].Estimate {
			continue
		}
		if slices.Contains(dst, i) || !keep(i) {
			continue
		}
		// After the members of the new part with an estimate at most i's: earlier ones win ties.
		at := len(dst)
		for at > start && ex[dst[at-1]].Estimate > ex[i].Estimate {
			at--
		}
		if !full {
			dst = append(dst, 0)
		}
		copy(dst[at+1:], dst[at:len(dst)-1])
		dst[at] = i
	}
	return dst
}

// orderTargets lists chosen first, then up to maxTargets-1 fallbacks: the best of the rest of the
// pool, then the best of the other eligible clusters (but not those over their region's overflow
// cap), so retries go to the next best. pool is in increasing order (a subsequence of eligible).
func orderTargets(chosen int, pool, eligible []int, ex []Explanation) []int {
	out := make([]int, 1, maxTargets)
	out[0] = chosen
	out = smallest(out, pool, ex, maxTargets, func(i int) bool { return true })
	return smallest(out, eligible, ex, maxTargets, func(i int) bool {
		_, inPool := slices.BinarySearch(pool, i)
		return !inPool && ex[i].Reason != contract.ReasonOverflowCap
	})
}

// maxTargets bounds the chosen cluster plus its fallbacks.
const maxTargets = 4

func intN(rng *rand.Rand, n int) int {
	if rng == nil {
		return rand.IntN(n)
	}
	return rng.IntN(n)
}

// meetingSLO narrows pool to the clusters estimated to meet req's TTFT objective, when some are
// and some are not, marking the others ReasonMissesSLO; with no objective, or when all or none
// meet it, the pool is left as it is (power-of-d then picks by estimate as usual). It filters in
// place.
func meetingSLO(pool []int, req Request, ex []Explanation) []int {
	if req.TTFTSLO <= 0 {
		return pool
	}
	meet := 0
	for _, i := range pool {
		if ex[i].Estimate <= req.TTFTSLO {
			meet++
		}
	}
	if meet == 0 || meet == len(pool) {
		return pool
	}
	out := pool[:0]
	for _, i := range pool {
		if ex[i].Estimate <= req.TTFTSLO {
			out = append(out, i)
		} else {
			ex[i].Reason = contract.ReasonMissesSLO
		}
	}
	return out
}
