package routing

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
)

// spillover decides for Options.Spillover among the eligible clusters (indexes into clusters,
// in input order; buf has room for all of them): the local clusters under the overflow threshold
// when there are any, else the clusters of the nearest region by RTT (within the overflow cap),
// one drawn uniformly. The fallbacks are the rest of that pool, then the other eligible clusters
// by RTT. Estimates are computed (ExplainRoute shows them, and Best marks the lowest of the pool
// considered, so the overflow metrics say how often the round trip picked the best cluster) but
// decide nothing.
func spillover(
	region string,
	clusters []Cluster,
	pol Policy,
	opt Options,
	eligible, buf []int,
	rng *rand.Rand,
	d Decision,
) (Decision, error) {
	pool := buf[:0]
	for _, i := range eligible {
		switch e := &d.Explain[i]; {
		case clusters[i].Region != region:
		case e.Utilization >= pol.OverflowThreshold:
			e.Reason = contract.ReasonOverThreshold
		default:
			pool = append(pool, i)
		}
	}
	route := contract.ReasonChosenLocal
	if len(pool) > 0 {
		markRemote(region, clusters, eligible, d.Explain, contract.ReasonLocalHasRoom)
	} else {
		route = contract.ReasonChosenOverflow
		pool = nearestRegion(region, clusters, pol, eligible, pool, d.Explain)
		if len(pool) == 0 {
			return d, ErrNoRoom
		}
	}
	markBest(pool, d.Explain, opt, &d)
	for _, i := range pool {
		d.Explain[i].Reason = contract.ReasonSpilloverNotDrawn
	}
	chosen := pool[intN(rng, len(pool))]
	d.Explain[chosen].Chosen, d.Explain[chosen].Reason = true, route
	d.Targets = byRTT(chosen, pool, eligible, clusters, d.Explain)
	if route == contract.ReasonChosenOverflow {
		d.Route, d.LeftBecause = RouteOverflow, leftBecause(region, clusters, d.Explain)
	} else {
		d.Route = RouteLocal
	}
	return d, nil
}

// nearestRegion appends to pool the eligible clusters elsewhere of the region whose nearest
// cluster (by RTT) is the nearest of all, leaving out the regions at the policy's overflow cap;
// it marks the other clusters elsewhere not nearest (or over the cap).
func nearestRegion(region string, clusters []Cluster, pol Policy, eligible, pool []int, ex []Explanation) []int {
	nearest, best := "", time.Duration(-1)
	for _, i := range eligible {
		c := &clusters[i]
		switch {
		case c.Region == region:
		case pol.OverflowCap > 0 && c.RegionOverflowInFlight >= pol.OverflowCap:
			ex[i].Reason = contract.ReasonOverflowCap
		case best < 0 || c.RTT < best:
			nearest, best = c.Region, c.RTT
		}
	}
	for _, i := range eligible {
		switch c := &clusters[i]; {
		case c.Region == region || ex[i].Reason == contract.ReasonOverflowCap:
		case c.Region == nearest:
			pool = append(pool, i)
		default:
			ex[i].Reason = contract.ReasonNotNearest
		}
	}
	return pool
}

// markRemote gives every eligible cluster outside region the reason r.
func markRemote(region string, clusters []Cluster, eligible []int, ex []Explanation, r contract.Reason) {
	for _, i := range eligible {
		if clusters[i].Region != region {
			ex[i].Reason = r
		}
	}
}

// markBest sets d.Best to the lowest estimate of pool and d.NearBest to the near-best window
// around it, as the estimated choice would have.
func markBest(pool []int, ex []Explanation, opt Options, d *Decision) {
	d.Best = pool[0]
	for _, i := range pool[1:] {
		if ex[i].Estimate < ex[d.Best].Estimate {
			d.Best = i
		}
	}
	d.NearBest = time.Duration(float64(ex[d.Best].Estimate) * (1 + opt.NearBest))
}

// byRTT lists chosen first, then up to maxTargets-1 fallbacks: the rest of pool, then the other
// eligible clusters (not those over their region's overflow cap), each group by RTT (ties in
// input order).
func byRTT(chosen int, pool, eligible []int, clusters []Cluster, ex []Explanation) []int {
	rtt := func(a, b int) int { return cmp.Compare(clusters[a].RTT, clusters[b].RTT) }
	out := make([]int, 1, maxTargets)
	out[0] = chosen
	rest := make([]int, 0, len(eligible))
	for _, group := range [][]int{pool, eligible} {
		rest = rest[:0]
		for _, i := range group {
			if !slices.Contains(out, i) && ex[i].Reason != contract.ReasonOverflowCap {
				rest = append(rest, i)
			}
		}
		slices.SortStableFunc(rest, rtt)
		for _, i := range rest {
			if len(out) == maxTargets {
				return out
			}
			out = append(out, i)
		}
	}
	return out
}
