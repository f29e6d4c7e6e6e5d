package routing

import (
	"math"
	"slices"
	"time"
)

// A decision over a subset of the candidates. At a thousand clusters, estimating every one and
// explaining it costs more than the rest of a request; the cluster table instead bounds each
// cluster's estimate from below from a few figures (Quiet), gives Decide only the clusters that
// can matter, and asks Covers whether the decision it got is the one Decide would make over every
// cluster. When it is not sure, the table decides over all of them.

// NoBound is a Rest bound with no left-out cluster behind it.
var NoBound = Bound{Lo: math.MaxInt64, At: math.MaxInt}

// Bound is the least a left-out cluster's estimate may be, and its position among every cluster
// (Decide breaks ties by position): among left-out clusters, the least Lo, and of those with it
// the least At.
type Bound struct {
	Lo time.Duration
	At int
}

// below reports whether an estimate est of the cluster at position at comes before b (is lower, or
// as low and earlier).
func (b Bound) below(est time.Duration, at int) bool { return est < b.Lo || est == b.Lo && at < b.At }

// minBound returns the lowest of bounds.
func minBound(bounds ...Bound) Bound {
	m := NoBound
	for _, b := range bounds {
		if !m.below(b.Lo, b.At) {
			continue
		}
		m = b
	}
	return m
}

// Quiet is what Estimate needs of a cluster to which this router has sent nothing since its
// summary and has nothing waiting: its predicted wait, engine step and prefill speed.
type Quiet struct {
	Wait, Step time.Duration
	Rate       float64 // prefill tokens/s per pod, the default when unknown
}

// QuietOf returns c's Quiet figures (c's own InFlight, Waiting, RTT, SummaryAge and cached prefix
// are not read).
func QuietOf(c *Cluster) Quiet {
	rate := c.PrefillTokensPerSec
	if rate <= 0 {
		rate = defaultPrefillTokensPerSec
	}
	wait := c.BaseTTFT
	if wait <= 0 {
		svc := c.ServiceTime
		if svc <= 0 {
			svc = defaultServiceTime
		}
		wait = time.Duration(int64(svc) * int64(c.Queue) / int64(max(c.ReadyPods, 1)))
	}
	return Quiet{Wait: wait, Step: c.StepTime, Rate: rate}
}

// Estimate returns Estimate for the cluster at round trip rtt with a summary age old and uncached
// prompt tokens it does not cache, when this router has nothing in flight or waiting there
// (exactly), and a lower bound of Estimate whatever this router has in flight or waiting there
// (work sent or waiting only adds to the wait).
func (q Quiet) Estimate(rtt, age time.Duration, uncached int) time.Duration {
	waited := q.Wait
	if age > 0 {
		waited = max(q.Wait-age, 0, min(q.Wait, q.Step))
	}
	return rtt + waited + q.Prefill(uncached)
}

// Prefill returns the prefill of uncached prompt tokens at the cluster (Estimate's last part).
func (q Quiet) Prefill(uncached int) time.Duration { return seconds(float64(uncached) / q.Rate) }

// Rest bounds the clusters a decision over a subset of the candidates was not given. Each of
// them is assumed not to be the request's session cluster and not Returning; it may be
// ineligible. Its group below is that of its summary's figures: this router's requests in flight
// there can only move it over the threshold.
type Rest struct {
	// At is each given cluster's position among every cluster (increasing: the given clusters
	// keep their order).
	At []int
	// Local, Over and Elsewhere bound the left-out clusters of each group: the router's region's
	// clusters under the policy's overflow threshold, its others, and the clusters elsewhere
	// (NoBound: there is none).
	Local, Over, Elsewhere Bound
	// Prefill is the least prefill of the prompt a left-out cluster may need.
	Prefill time.Duration
	// Locals visits every left-out cluster in the router's region that lists the model (needed
	// only when the request leaves the region); nil when there is none.
	Locals func(yield func(LeftOut) bool)
}

// LeftOut is one left-out cluster of the router's region (Rest.Locals).
type LeftOut struct {
	// Lo is the least estimate it may have.
	Lo time.Duration
	// Under and Over place a possibly eligible cluster under or over the overflow threshold;
	// neither: it cannot take the request.
	Under, Over bool
	// Busy is true when its summary has a queue.
	Busy bool
	// Hot is true when this router has requests in flight or waiting there, or its passive
	// health of it is not clear: it may be busy or backlogged without a queue, or over the
	// threshold while Under.
	Hot bool
}

// Covers reports whether d, which Decide returned over clusters, is the decision Decide would
// return over clusters and the clusters rest bounds (in any order around them): the same chosen
// cluster, fallbacks, route, best and near-best estimates, session choice, reason for leaving the
// region and hand-back offer. It is conservative: false means only that it cannot tell.
func Covers(region string, clusters []Cluster, req Request, opt Options, d *Decision, rest Rest) bool {
	if opt.Spillover || opt.LocalOnly || len(d.Targets) == 0 || d.Best < 0 || len(rest.At) != len(clusters) {
		return false
	}
	all := minBound(rest.Local, rest.Over, rest.Elsewhere)
	// The best estimate elsewhere and the least prefill are the same over every cluster.
	if d.remote >= 0 && rest.Elsewhere.Lo < d.remote || d.remote < 0 && rest.Elsewhere != NoBound {
		return false
	}
	if d.commonUsed && rest.Prefill < d.common {
		return false
	}
	pool := all // bounds the left-out members of the pool
	if d.local {
		pool = rest.Local
	}
	ex := d.Explain
	// A returning cluster's share depends on the size of the whole pool.
	if pool != NoBound && slices.ContainsFunc(d.pool, func(i int) bool { return clusters[i].Returning }) {
		return false
	}
	// With an objective the pool meets nowhere, a left-out member meeting it changes the pool.
	if req.TTFTSLO > 0 && pool.Lo <= req.TTFTSLO &&
		!slices.ContainsFunc(d.pool, func(i int) bool { return ex[i].Estimate <= req.TTFTSLO }) {
		return false
	}
	// Every cluster the decision used (the best, the near-best choices, the fallbacks) comes
	// before every left-out one in the pool; with fewer near-best choices than it may have, a
	// left-out cluster in the near-best window would be one.
	var buf [8]int
	choices := min(max(opt.MaxChoices, 1), len(buf))
	near := smallest(buf[:0], d.pool, ex, choices, func(i int) bool { return ex[i].Estimate <= d.NearBest })
	if len(near) < choices && pool.Lo <= d.NearBest {
		return false
	}
	before := func(b Bound, i int) bool { return b.below(ex[i].Estimate, rest.At[i]) }
	if !before(pool, d.Best) || slices.ContainsFunc(near, func(i int) bool { return !before(pool, i) }) {
		return false
	}
	fromPool := 0
	for _, i := range d.Targets[1:] {
		if slices.Contains(d.pool, i) {
			fromPool++
		}
	}
	if fromPool == maxTargets-1 {
		if slices.ContainsFunc(d.Targets[1:], func(i int) bool { return !before(pool, i) }) {
			return false
		}
	} else if pool != NoBound || len(d.Targets) < maxTargets && all != NoBound ||
		slices.ContainsFunc(d.Targets[1:], func(i int) bool { return !before(all, i) }) {
		// The fallbacks came from outside the pool: a left-out member of it would have come first,
		// and a left-out cluster may be among them or add one.
		return false
	}
	if d.local {
		return true
	}
	// The request leaves the region: no left-out local cluster may keep it, and none may be a
	// better reason for leaving than the subset's.
	if rest.Locals == nil {
		return true
	}
	rank := leftRank(region, clusters, ex)
	ok := true
	rest.Locals(func(l LeftOut) bool {
		r := 1 // cannot take the request: unavailable
		switch {
		case l.Over:
			r = 2
		case l.Under:
			slo := req.TTFTSLO > 0 && d.remote >= 0 && d.remote <= req.TTFTSLO && l.Lo > req.TTFTSLO
			sooner := l.Busy && d.remote >= 0 && float64(l.Lo) > preferenceLimit(d.remote, opt)
			if !slo && !sooner {
				ok = false
				return false
			}
			// Missing the objective (3) comes first; else past the preference margin (4), or
			// past its throughput (5) when it may be backlogged.
			r = 4
			switch {
			case slo:
				r = 3
			case l.Hot:
				r = 5
			}
		}
		ok = r <= rank
		return ok
	})
	return ok
}
