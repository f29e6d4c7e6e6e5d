package clustertable

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// Reduced decisions. Route decides a request over the few clusters that can matter instead of
// every cluster that serves the model:
//
//   - Per model the index keeps, beside the entries, a compact slot per cluster (no pointers):
//     the figures a quiet cluster's estimate needs (routing.Quiet), its load, its summary's age
//     and a few flags. Per cluster it keeps a floor of the round trip (the prior, lowered as
//     measurements come).
//   - This router's own state of a cluster (requests sent since its summary, in flight or
//     waiting, an ejection, a probe, slow start) only adds to its estimate or takes it out; the
//     table keeps the clusters that have any of it on a short list, the hot ones.
//   - Per request, a lower bound of every cluster's estimate comes from its slot (the whole
//     prompt cached where it has a sketch, the round-trip floor) in one pass without allocation.
//     Per group (the router's region under the overflow threshold, over it, elsewhere) the TopK
//     lowest bounds are kept, ordered by bound and then position as Decide breaks ties; a cluster
//     that may make the cut is refined first (its sketch matched, a hot one's state applied).
//     The last decision's picks are offered first, so that the bounds to beat are low at once.
//   - The picks, the session's cluster and the hot clusters in slow start (whose admissions are
//     drawn in view order) are built into entries, their state applied, claimed and their
//     sketches matched, and routing.Decide runs over them only.
//   - routing.Covers then checks the decision against the bounds of the clusters left out (their
//     group's lowest); when it cannot tell that deciding over every cluster gives the same
//     decision (a returning cluster's share, for one, depends on how many clusters the pool
//     has), the turns taken are given back and the request is decided over every cluster, as
//     View and Claim do.
//
// The decision is therefore the one over every cluster (TestRouteDecidesAsEveryCluster), and
// a request touches O(TopK) entries and O(clusters) slots. The returned view holds only the
// clusters decided over; the admin API's explanations (View, routing.Decide) still cover all.

// DefaultTopK is Config.TopK's default: more than routing's near-best choices (3) and targets (4).
const DefaultTopK = 8

// slot is one cluster's figures for one model that bound its estimate from below.
type slot struct {
	quiet routing.Quiet
	util  float64       // its load with nothing of this router in flight
	age   time.Duration // the summary's age in the index's snapshot
	at    int32         // the summary's position in the index's sorted snapshot
	flags uint8
}

// Slot flags.
const (
	slotCandidate = 1 << iota // serves the model with ready pods, fresh, not saturated
	slotLists                 // lists the model (for the reason a request leaves the region)
	slotSketch                // has a decoded prefix sketch
	slotBusy                  // its summary has a queue
)

// describe fills in idx's per-cluster figures: ordinals, generation times, regions and the priors
// of the round trips.
func (t *Table) describe(idx *index) {
	snap := idx.sorted
	idx.byName = make(map[string]int, len(snap))
	regionAt := map[string]int{t.cfg.Region: 0}
	idx.regionNames = []string{t.cfg.Region}
	for i := 0; i < len(snap); {
		j := i + 1
		for j < len(snap) && snap[j].Cluster == snap[i].Cluster {
			j++
		}
		best := &snap[i]
		for k := i + 1; k < j; k++ {
			if fresher(snap[k], *best) {
				best = &snap[k]
			}
		}
		idx.byName[best.Cluster] = len(idx.best)
		idx.best = append(idx.best, best)
		idx.gens = append(idx.gens, best.Summary.GetGeneratedAtUnixNano())
		r, ok := regionAt[best.Region]
		if !ok {
			r = len(idx.regionNames)
			regionAt[best.Region] = r
			idx.regionNames = append(idx.regionNames, best.Region)
		}
		idx.regions = append(idx.regions, r)
		idx.priors = append(idx.priors, t.priorRTT(best))
		i = j
	}
	idx.rttLow = make([]atomic.Int64, len(idx.best))
	for ord, p := range idx.priors {
		idx.rttLow[ord].Store(int64(p))
	}
}

// slots returns the slots of a model's entries in idx.
func (t *Table) slots(idx *index, entries []Entry) []slot {
	out := make([]slot, len(entries))
	for i := range entries {
		e, s := &entries[i], &out[i]
		c := &e.Cluster
		s.quiet, s.util = routing.QuietOf(c), c.Utilization(0)
		s.age, s.at = idx.sorted[e.at].Age, int32(e.at)
		if c.Serves && !c.Stale && c.ReadyPods > 0 && s.util < 1 {
			s.flags |= slotCandidate
		}
		if c.Serves || c.Lists {
			s.flags |= slotLists
		}
		if e.bloom != nil {
			s.flags |= slotSketch
		}
		if c.Queue > 0 {
			s.flags |= slotBusy
		}
	}
	return out
}

// rttFloor returns a floor of the cluster's round trip, whose prior is prior, as its measurement
// stands (see rttMeter.estimate: a blend of the two, rounded down).
func (t *Table) rttFloor(st *clusterState, prior time.Duration) time.Duration {
	if t.cfg.MeasuredRTT.Off || st.rtt.last.IsZero() {
		return prior
	}
	return min(prior, time.Duration(st.rtt.avg)) - 1
}

// lowerRTT lowers the current index's round-trip floor of the cluster after a measurement; t.mu
// must be held.
func (t *Table) lowerRTT(st *clusterState) {
	idx := t.idx.Load()
	if idx == nil || st.seen != idx.seq {
		return
	}
	if f := int64(t.rttFloor(st, idx.priors[st.ord])); f < idx.rttLow[st.ord].Load() {
		idx.rttLow[st.ord].Store(f)
	}
}

// quiet reports whether this router has nothing of its own about the cluster at now that a
// reduced decision must see: nothing in flight, sent since its summary in idx or waiting, no
// ejection, probe or slow start. (A stale spell matters once the cluster is fresh again, in a
// new index, whose first reduced decision notes every cluster's signal: a restarted gateway's
// slow start then makes its cluster hot.) t.mu must be held.
func (t *Table) quiet(st *clusterState, idx *index, now time.Time) bool {
	h := &st.health
	if st.pending > 0 || st.waiting > 0 || h.ejected(now) || h.halfOpen() || h.share(now, t.cfg.Ejection.SlowStart) < 1 {
		return false
	}
	if st.seen != idx.seq { // not a cluster of idx
		return true
	}
	n := st.sends.next
	return n == 0 || st.sends.ring[(n-1)%len(st.sends.ring)] <= idx.gens[st.ord]
}

// markHot puts the cluster on the hot list; t.mu must be held.
func (t *Table) markHot(st *clusterState) {
	if !st.hot {
		st.hot = true
		t.hot = append(t.hot, st)
	}
}

// hotOrdinals prunes the hot list at now, sets the bits of the hot clusters' ordinals in idx in
// hot and appends to dst those of the clusters in slow start (a returning cluster's share depends
// on the whole pool, and its admission is drawn in view order: a reduced decision must see it).
// It reports false when idx is no longer the current index. It notes every cluster's summary
// signal once per index, as Claim would. t.mu must be held.
func (t *Table) hotOrdinals(idx *index, now time.Time, hot []uint64, dst []int) ([]int, bool) {
	if t.idx.Load() != idx {
		return dst, false
	}
	if !idx.noted.Load() {
		for _, b := range idx.best {
			st := t.stateOf(b.Cluster)
			st.health.noteSignal(b.Stale, b.Node, now)
			if !t.quiet(st, idx, now) {
				t.markHot(st)
			}
		}
		idx.noted.Store(true)
	}
	kept := t.hot[:0]
	for _, st := range t.hot {
		if t.quiet(st, idx, now) {
			st.hot = false
			continue
		}
		kept = append(kept, st)
		if st.seen != idx.seq {
			continue
		}
		hot[st.ord/64] |= 1 << (st.ord % 64)
		if h := &st.health; !h.ejected(now) && h.share(now, t.cfg.Ejection.SlowStart) < 1 {
			dst = append(dst, st.ord)
		}
	}
	clear(t.hot[len(kept):])
	t.hot = kept
	return dst, true
}

// picks keeps the k lowest bounds of a group seen so far, lowest first, and one more: the
// lowest of those left out.
type picks struct {
	lo     [maxTopK + 1]time.Duration
	ord    [maxTopK + 1]int
	cached [maxTopK + 1]int // the prompt tokens its sketch holds, -1 when not matched
	n      int
}

// maxTopK bounds Config.TopK.
const maxTopK = 32

// wants reports whether the cluster at ord with bound lo would be kept: bounds are ordered by
// value, then ordinal (Decide's ties go by position).
func (p *picks) wants(lo time.Duration, ord, k int) bool {
	return p.n < k+1 || lo < p.lo[k] || lo == p.lo[k] && ord < p.ord[k]
}

// add offers the cluster at ord with bound lo (cached as picks.cached); k+1 are kept.
func (p *picks) add(lo time.Duration, ord, cached, k int) {
	if !p.wants(lo, ord, k) {
		return
	}
	at := min(p.n, k)
	for at > 0 && (p.lo[at-1] > lo || p.lo[at-1] == lo && p.ord[at-1] > ord) {
		at--
	}
	if p.n < k+1 {
		p.n++
	}
	copy(p.lo[at+1:p.n], p.lo[at:p.n-1])
	copy(p.ord[at+1:p.n], p.ord[at:p.n-1])
	copy(p.cached[at+1:p.n], p.cached[at:p.n-1])
	p.lo[at], p.ord[at], p.cached[at] = lo, ord, cached
}

// rest bounds the group's clusters left out (routing.NoBound: none): the least of their bounds
// in the order of wants.
func (p *picks) rest(k int) routing.Bound {
	if p.n <= k {
		return routing.NoBound
	}
	return routing.Bound{Lo: p.lo[k], At: p.ord[k]}
}

// Route decides req for model (prefix-block hashes hashes) under pol and opt, for a request that
// will be sent: it returns the clusters decided over, already claimed (Claim), and the decision
// over them, which is the decision over every cluster (see the top of this file). power-of-d
// draws from src (nil: math/rand/v2's global source). Release the returned view after the
// decision.
func (t *Table) Route(
	model string,
	hashes []uint64,
	pol routing.Policy,
	req routing.Request,
	opt routing.Options,
	src rand.Source,
) ([]Entry, routing.Decision, error) {
	var rng *rand.Rand
	var rec *replay
	if src != nil { // the draws of a reduced decision are replayed to a full one
		rec = &replay{src: src}
		rng = rand.New(rec)
	}
	if !opt.Spillover && !opt.LocalOnly {
		view, d, ok, err := t.routeReduced(model, hashes, pol, req, opt, rng)
		if ok {
			t.decisions[pathReduced].Add(1)
			t.metrics.decision(pathReduced)
			return view, d, err
		}
		if rec != nil {
			rec.pos = 0
		}
	}
	t.decisions[pathFull].Add(1)
	t.metrics.decision(pathFull)
	view := t.View(model, hashes)
	t.Claim(view)
	cs := make([]routing.Cluster, len(view))
	for i := range view {
		cs[i] = view[i].Cluster
	}
	d, err := routing.Decide(t.cfg.Region, cs, pol, req, opt, rng)
	return view, d, err
}

// Decision paths (DecisionPaths and the decisions metric).
const (
	pathReduced = iota
	pathFull
)

// DecisionPaths returns how many Route decisions were made over a subset of the clusters and how
// many over every cluster.
func (t *Table) DecisionPaths() (reduced, full uint64) {
	return t.decisions[pathReduced].Load(), t.decisions[pathFull].Load()
}

// routeReduced is Route over a subset of the clusters; ok is false when the subset's decision
// may not be the full one (nothing is left claimed then).
func (t *Table) routeReduced(
	model string,
	hashes []uint64,
	pol routing.Policy,
	req routing.Request,
	opt routing.Options,
	rng *rand.Rand,
) (view []Entry, d routing.Decision, ok bool, err error) {
	now := t.cfg.Now()
	idx, snap := t.current(now)
	mi := t.modelIndex(idx, model)
	n := len(mi.slots)
	k := t.cfg.TopK

	var forcedBuf, hotBuf [32]uint64 // clusters decided over whatever their bounds; the hot ones
	forced, hot := forcedBuf[:], hotBuf[:]
	if words := (n + 63) / 64; words > len(forced) {
		forced, hot = make([]uint64, words), make([]uint64, words)
	}
	var ordBuf [3*maxTopK + 16]int
	ords := ordBuf[:0]
	// The lock is held through the bounds: a hot cluster's bound is its estimate.
	t.mu.Lock()
	locked := true
	defer func() {
		if locked {
			t.mu.Unlock()
		}
	}()
	ords, ok = t.hotOrdinals(idx, now, hot, ords)
	if !ok {
		return nil, d, false, nil
	}
	if ord, found := idx.byName[req.SessionCluster]; found && req.SessionCluster != "" {
		ords = append(ords, ord)
	}
	for _, o := range ords {
		forced[o/64] |= 1 << (o % 64)
	}

	// The bounds, in one pass.
	var allowedBuf [16]bool
	allowed := allowedBuf[:0]
	for _, r := range idx.regionNames {
		allowed = append(allowed, len(pol.AllowedRegions) == 0 || slices.Contains(pol.AllowedRegions, r))
	}
	local := idx.regionNames[0] == t.cfg.Region
	full := len(hashes) * tokensPerBlock
	uncachedSketch, uncachedNone := max(req.PromptTokens-full, 0), max(req.PromptTokens, 0)
	delta := max(now.Sub(idx.at), 0)
	// bound returns the cluster's lower bound with cached prompt tokens in its cache (-1: as
	// many as its sketch may hold), and the prefill in it.
	bound := func(ord, cached int) (lo, prefill time.Duration) {
		s := &mi.slots[ord]
		age := s.age + delta
		if snap != nil {
			age = idx.age(int(s.at), snap, now)
		}
		uncached := uncachedNone
		switch {
		case cached >= 0:
			uncached = max(req.PromptTokens-cached, 0)
		case s.flags&slotSketch != 0:
			uncached = uncachedSketch
		}
		rtt := time.Duration(idx.rttLow[ord].Load())
		return s.quiet.Estimate(rtt, age, uncached), s.quiet.Prefill(uncached)
	}
	var groups [3]picks
	var scratch Entry
	prefillLo := routing.NoBound.Lo
	offer := func(ord int) {
		s := &mi.slots[ord]
		if s.flags&slotCandidate == 0 || !allowed[idx.regions[ord]] || forced[ord/64]&(1<<(ord%64)) != 0 {
			return
		}
		g := 2
		if local && idx.regions[ord] == 0 {
			g = 0
			if s.util >= pol.OverflowThreshold {
				g = 1
			}
		}
		cached := -1
		lo, prefill := bound(ord, cached)
		if !groups[g].wants(lo, ord, k) {
			prefillLo = min(prefillLo, prefill)
			return
		}
		// It may be among the best: a hot cluster's state tells what this router has sent it, and
		// its sketch how much of the prompt it holds (the dearer of the two).
		sketched := s.flags&slotSketch != 0 && len(hashes) > 0
		var e *Entry
		if hot[ord/64]&(1<<(ord%64)) != 0 {
			e = &scratch
			*e = mi.entries[ord]
			e.Age = idx.age(e.at, snap, now)
			t.applyState(e, e.state, now)
			if sketched {
				e.Cluster.CachedPrefixTokens = full
			}
			lo = max(lo, routing.Estimate(&e.Cluster, req))
		}
		if sketched && groups[g].wants(lo, ord, k) {
			cached = mi.entries[ord].bloom.LongestPrefix(hashes) * tokensPerBlock
			lo, prefill = bound(ord, cached)
			if e != nil {
				e.Cluster.CachedPrefixTokens = cached
				lo = max(lo, routing.Estimate(&e.Cluster, req))
			}
		}
		prefillLo = min(prefillLo, prefill)
		groups[g].add(lo, ord, cached, k)
	}
	// The last reduced decision's picks first: the bounds to beat are low at once. They are
	// then forced, so that the pass skips them.
	var warmed []int
	if warm := mi.warm.Load(); warm != nil && warm.seq == idx.seq {
		warmed = warm.ords
	}
	for _, o := range warmed {
		offer(o)
		forced[o/64] |= 1 << (o % 64)
	}
	for ord := range mi.slots {
		offer(ord)
	}
	for _, o := range warmed {
		if !slices.Contains(ords, o) {
			forced[o/64] &^= 1 << (o % 64)
		}
	}
	t.mu.Unlock()
	locked = false
	var matchedBuf [3 * maxTopK]struct{ ord, cached int }
	matched := matchedBuf[:0] // the sketches matched already
	for g := range groups {
		for i := range min(groups[g].n, k) {
			o := groups[g].ord[i]
			forced[o/64] |= 1 << (o % 64)
			ords = append(ords, o)
			if groups[g].cached[i] >= 0 {
				matched = append(matched, struct{ ord, cached int }{o, groups[g].cached[i]})
			}
		}
	}
	if len(matched) > 0 || groups[0].n+groups[1].n+groups[2].n > 0 {
		picked := &warmPicks{seq: idx.seq}
		for g := range groups {
			picked.ords = append(picked.ords, groups[g].ord[:min(groups[g].n, k)]...)
		}
		mi.warm.Store(picked)
	}
	slices.Sort(ords)
	ords = slices.Compact(ords)

	// The subset's entries, as View and Claim make them.
	view = make([]Entry, len(ords))
	for i, o := range ords {
		view[i] = mi.entries[o]
		e := &view[i]
		e.Age = idx.age(e.at, snap, now)
		e.Cluster.Drained = t.drains != nil && t.drains.Drained(e.Cluster.Name, e.Cluster.Region)
	}
	t.applyStates(view, now)
	t.Claim(view)
	if !open(view) { // the held clusters are withheld only when another cluster can take the request
		t.Release(view, -1)
		return nil, d, false, nil
	}
	if len(hashes) > 0 {
		for i, o := range ords {
			b := view[i].bloom
			if b == nil {
				continue
			}
			if m := slices.IndexFunc(matched, func(m struct{ ord, cached int }) bool { return m.ord == o }); m >= 0 {
				view[i].Cluster.CachedPrefixTokens = matched[m].cached
			} else {
				view[i].Cluster.CachedPrefixTokens = b.LongestPrefix(hashes) * tokensPerBlock
			}
		}
	}
	cs := make([]routing.Cluster, len(view))
	for i := range view {
		cs[i] = view[i].Cluster
	}
	d, err = routing.Decide(t.cfg.Region, cs, pol, req, opt, rng)
	rest := routing.Rest{
		At: ords, Local: groups[0].rest(k), Over: groups[1].rest(k), Elsewhere: groups[2].rest(k), Prefill: prefillLo,
	}
	if local {
		rest.Locals = func(yield func(routing.LeftOut) bool) {
			for ord := range mi.slots {
				s := &mi.slots[ord]
				if idx.regions[ord] != 0 || s.flags&slotLists == 0 || forced[ord/64]&(1<<(ord%64)) != 0 {
					continue
				}
				l := routing.LeftOut{Busy: s.flags&slotBusy != 0, Hot: hot[ord/64]&(1<<(ord%64)) != 0}
				if s.flags&slotCandidate != 0 && allowed[0] {
					l.Lo, _ = bound(ord, -1)
					l.Under, l.Over = s.util < pol.OverflowThreshold, s.util >= pol.OverflowThreshold
				}
				if !yield(l) {
					return
				}
			}
		}
	}
	if err != nil || (!t.coversOff && !routing.Covers(t.cfg.Region, cs, req, opt, &d, rest)) {
		t.Release(view, -1)
		return nil, d, false, nil
	}
	return view, d, true, nil
}

// open reports whether a cluster of view that is not withheld could take a request (withhold's
// test).
func open(view []Entry) bool {
	for i := range view {
		c := &view[i].Cluster
		if c.Serves && !c.Stale && !c.Drained && !c.Unhealthy && c.ReadyPods > 0 && c.SaturatedFraction < 1 {
			return true
		}
	}
	return false
}

// replay records the numbers a source gave so that they can be given again (pos 0): a full
// decision after a reduced one draws what it would have drawn first.
type replay struct {
	src   rand.Source
	drawn []uint64
	pos   int
}

func (r *replay) Uint64() uint64 {
	if r.pos < len(r.drawn) {
		r.pos++
		return r.drawn[r.pos-1]
	}
	v := r.src.Uint64()
	r.drawn = append(r.drawn, v)
	r.pos++
	return v
}
