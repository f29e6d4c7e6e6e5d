package clustertable

import (
	"math"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// DefaultPrefixTopK is how many clusters on each side of a decision (the router's region, the
// others) MatchPrefixes matches exactly: more than routing's near-best choices (3) and targets (4).
const DefaultPrefixTopK = 8

// MatchPrefixes sets, for a request with the given prompt prefix-block hashes, the cached prompt
// tokens of the clusters of view (from View without hashes) whose estimated time to first token
// may be among the k lowest of their group: the router's region's clusters under the policy's
// overflow threshold (those local first keeps), its others, and the clusters elsewhere. A
// request's estimate on a cluster lies between its estimate with the whole prompt cached and
// with nothing cached; in each group, a cluster whose lower bound is above the k-th lowest upper
// bound cannot be among the k best, and is left with nothing cached (its upper bound). So the k
// best clusters of each group, their order and their estimates are exact, and a cluster outside
// them is estimated no sooner than it is. Matching a prompt against a sketch costs a few memory
// reads per block, so a view of N clusters costs O(N) arithmetic and about 3k sketch matches.
func MatchPrefixes(view []Entry, hashes []uint64, region string, pol routing.Policy, req routing.Request, k int) {
	if len(hashes) == 0 {
		return
	}
	full := len(hashes) * tokensPerBlock
	var groups [3][]bound
	for i := range view {
		c := &view[i].Cluster
		if view[i].bloom == nil || !routing.Eligible(c, pol, req) {
			continue
		}
		g := 2
		if c.Region == region {
			g = 0
			if c.Utilization(req.AvgTokens) >= pol.OverflowThreshold {
				g = 1
			}
		}
		c.CachedPrefixTokens = full
		lo := routing.Estimate(c, req)
		c.CachedPrefixTokens = 0
		groups[g] = append(groups[g], bound{i: i, lo: lo, hi: routing.Estimate(c, req)})
	}
	for _, group := range groups {
		limit := time.Duration(math.MaxInt64)
		if len(group) > k {
			limit = kthLowest(group, k)
		}
		for _, b := range group {
			if b.lo <= limit {
				e := &view[b.i]
				e.Cluster.CachedPrefixTokens = e.bloom.LongestPrefix(hashes) * tokensPerBlock
			}
		}
	}
}

// bound is a cluster's estimate (view index i) with the whole prompt cached and with none of it.
type bound struct {
	i      int
	lo, hi time.Duration
}

// kthLowest returns the k-th lowest upper bound of group (len(group) > k >= 1).
func kthLowest(group []bound, k int) time.Duration {
	his := make([]time.Duration, len(group))
	for n, b := range group {
		his[n] = b.hi
	}
	slices.Sort(his)
	return his[k-1]
}
