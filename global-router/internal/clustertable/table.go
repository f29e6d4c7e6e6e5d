// Package clustertable is the global router's view of every cluster: the newest fresh capacity
// summary among each cluster's gateway replicas (from gossip), this router's own passive health
// of each cluster (errors and refusals on forwarded requests), the requests it sent each cluster
// since that cluster's summary, and measured or configured round trips. It turns that view into
// routing candidates for one request.
package clustertable

import (
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Source provides gossip summaries. *gossip.Node implements it.
type Source interface {
	Snapshot() []gossip.Summary
}

// DrainView tells which clusters and regions an operator drained.
type DrainView interface {
	Drained(cluster, region string) bool
}

// Config tunes the table.
type Config struct {
	// Region is the router's own region.
	Region string
	// RTT sets the prior round trip to a region (simulated latency in the local stack, or a
	// known figure); regions not listed use gossip's network-coordinate estimate, and the
	// router's own region 0. Round trips measured on forwarded requests correct the prior
	// (see MeasuredRTT).
	RTT map[string]time.Duration
	// MeasuredRTT tunes the round trips measured on forwarded requests; zero fields take the
	// defaults of DefaultRTTConfig.
	MeasuredRTT RTTConfig
	// Ejection is the passive-health policy.
	Ejection EjectionConfig
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand returns a uniform number in [0,1) for slow start's admissions (default
	// math/rand/v2.Float64). It must be safe for concurrent use.
	Rand func() float64
	// IndexInterval is the least time between two rebuilds of the candidate index when the source
	// signals its changes (gossip.Node): a change reaches the routing decisions at most this long
	// after gossip applied it (default DefaultIndexInterval; see index.go).
	IndexInterval time.Duration
	// TopK is how many clusters of each group (the router's region under the overflow threshold,
	// over it, elsewhere) with the lowest bounds of their estimates Route decides over, besides
	// the clusters it must see (default DefaultTopK, at most 32; see subset.go).
	TopK int
	// Logger receives the table's warnings (ejections refused by the cap); nil discards them.
	Logger *slog.Logger
	// Registerer, when set, registers the table's metrics.
	Registerer prometheus.Registerer
}

// Table is safe for concurrent use.
type Table struct {
	cfg    Config
	src    Source
	drains DrainView

	mu     sync.Mutex
	states map[string]*clusterState // by cluster
	// seq numbers views; a cluster state remembers the last view that saw its cluster.
	seq uint64
	// sketchHolders counts the states holding decoded prefix sketches.
	sketchHolders int

	// idx is the current candidate index (index.go); building serialises its rebuilds for a
	// source that signals changes on changes.
	idx      atomic.Pointer[index]
	building sync.Mutex
	changes  <-chan struct{}
	// hot lists the states with something of this router's own a reduced decision must see
	// (subset.go); t.mu guards it.
	hot []*clusterState
	// decisions counts Route's decisions by path; coversOff (tests) skips routing.Covers.
	decisions [2]atomic.Uint64
	coversOff bool

	metrics       *metrics
	refusalLogged time.Time // when a refused ejection was last logged; t.mu guards it
}

// clusterState is what the table keeps about one cluster between views; t.mu guards it.
type clusterState struct {
	health   health
	sends    sendTimes
	rtt      rttMeter
	sketches sketchCache
	seen     uint64 // the last index that has the cluster
	ord      int    // its ordinal in that index
	hot      bool   // on the table's hot list
	// waiting counts this router's accepted streams there without a first token yet, and
	// waitingTokens sums their prompt tokens.
	waiting       int
	waitingTokens int64
	// pending counts this router's attempts there that have begun and have no outcome yet
	// (on their way, or waiting for their headers), and pendingTokens sums their prompt tokens.
	pending       int
	pendingTokens int64
}

// New returns a table over src. drains may be nil (nothing drained).
func New(cfg Config, src Source, drains DrainView) *Table {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Ejection == (EjectionConfig{}) {
		cfg.Ejection = DefaultEjectionConfig()
	}
	cfg.MeasuredRTT = cfg.MeasuredRTT.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.IndexInterval <= 0 {
		cfg.IndexInterval = DefaultIndexInterval
	}
	if cfg.TopK <= 0 {
		cfg.TopK = DefaultTopK
	}
	cfg.TopK = min(cfg.TopK, maxTopK)
	t := &Table{
		cfg:     cfg,
		src:     src,
		drains:  drains,
		states:  map[string]*clusterState{},
		metrics: newMetrics(cfg.Registerer),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(capacityCollector{t})
	}
	if s, ok := src.(subscriber); ok {
		// The subscription lasts as long as the source: a table is made once per node.
		t.changes, _ = s.Subscribe()
	}
	return t
}

// Entry is one cluster in a view: its routing figures for one model and where to forward.
type Entry struct {
	Cluster routing.Cluster
	// URLs are the gateway replicas' URLs, freshest first.
	URLs []string
	// Summary is the chosen replica's summary (nil for a cluster known only as stale).
	Summary *gossipv1.CapacitySummary
	// Age of that summary.
	Age time.Duration
	// Share is the fraction of requests the cluster is offered while in slow start (1 outside
	// it); Withheld is true when slow start or probing left it out of this view (it is then
	// Unhealthy).
	Share    float64
	Withheld bool
	// Unverified is true while the cluster's round trip, measured slow, has mostly faded back
	// into the prior without a new answer: it is offered to one probe request at a time (see
	// RTTConfig.ProbeBelow).
	Unverified bool

	// Filled while the view is built.
	probeTurn time.Time               // the probe turn this view took (zero: none), for Release
	best      *gossip.Summary         // the chosen replica's summary, in the index's snapshot
	at        int                     // best's position in the index's sorted snapshot
	model     *gossipv1.ModelCapacity // the summary's figures for the model; nil if it does not serve it
	state     *clusterState           // the table's state of the cluster
	health    health                  // a copy of its health, with the summary's signal noted
	bloom     *sketch.Bloom           // the model's decoded prefix sketch
	known     bool                    // the table had decoded the sketch (bloom nil: invalid)
}

// View returns every known cluster as a routing candidate for model (a base model or an adapter)
// whose prompt has the given prefix-block hashes. It is a read: it takes no probe turn of a
// half-open or unverified cluster (one that is due shows as offered), draws no slow-start
// admission (a cluster in slow start shows as offered, with its Share) and records nothing of
// what it saw, so the admin API's cluster list and dry runs may poll it without starving a
// returning cluster of its probes. A request that will be routed over the view calls Claim on
// it first, and Release after the decision. (The table keeps the prefix sketches it decodes for
// the next views: a cache, which changes no view.)
//
// The entries come from the table's candidate index (index.go), built when gossip changes, not
// per request; the table's lock is held only while the cluster states are read, and the prompt is
// matched against the prefix sketches after.
func (t *Table) View(model string, prefixHashes []uint64) []Entry {
	now := t.cfg.Now()
	idx, snap := t.current(now)
	out := slices.Clone(t.modelEntries(idx, model))
	for i := range out {
		e := &out[i]
		e.Age = idx.age(e.at, snap, now)
		e.Cluster.Drained = t.drains != nil && t.drains.Drained(e.Cluster.Name, e.Cluster.Region)
	}
	t.applyStates(out, now)
	if len(prefixHashes) > 0 {
		for i := range out {
			if b := out[i].bloom; b != nil {
				out[i].Cluster.CachedPrefixTokens = b.LongestPrefix(prefixHashes) * tokensPerBlock
			}
		}
	}
	return out
}

// Claim readies view, which View returned, for the request about to be routed over it: it
// records the signals the view saw (a restarted gateway's summary begins its slow start), takes
// the probe turn of each half-open or unverified cluster the view offers and draws each
// slow-starting cluster's admission. Clusters not admitted, or whose turn another request took
// since the view, are left out (Unhealthy and Withheld) unless no other cluster could take the
// request. Claim a view once; Release gives back the turns of the clusters the request does not
// go to.
func (t *Table) Claim(view []Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	for i := range view {
		e := &view[i]
		if e.state == nil || e.best == nil {
			continue
		}
		e.state.health.noteSignal(e.best.Stale, e.best.Node, now)
		// What the view's own slow start and probes decided is decided again below, on the
		// table's state.
		if e.Withheld {
			e.Withheld, e.Cluster.Unhealthy = false, false
		}
		e.Cluster.Returning = false
	}
	t.withhold(view, true, now)
	if idx := t.idx.Load(); idx != nil {
		for i := range view {
			if st := view[i].state; st != nil && !t.quiet(st, idx, now) {
				t.markHot(st)
			}
		}
	}
}

// applyStates fills in, under the table's lock, what the table keeps about each cluster: passive
// health, slow start and probes, the measured round trip, and requests sent since the summary. It
// changes no cluster's state (Claim records what the view saw).
func (t *Table) applyStates(out []Entry, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range out {
		t.applyState(&out[i], out[i].state, now)
	}
	t.withhold(out, false, now)
}

// applyState fills in one cluster's health, round trip, requests sent since its summary (and
// those on their way) and streams waiting there for a first token (and those on their way). The
// health is a copy that has noted the summary's signal: the table's is Claim's to change.
func (t *Table) applyState(e *Entry, st *clusterState, now time.Time) {
	c := &e.Cluster
	e.health = st.health
	h := &e.health
	h.noteSignal(e.best.Stale, e.best.Node, now)
	c.Unhealthy = h.ejected(now)
	e.Share = h.share(now, t.cfg.Ejection.SlowStart)
	if !t.cfg.MeasuredRTT.Off { // c.RTT holds the prior
		c.RTT, e.Unverified = st.rtt.estimate(c.RTT, now, t.cfg.MeasuredRTT)
	}
	if e.model != nil {
		c.SummaryAge = e.Age
		sent, sentTokens, oldest := st.sends.since(e.Summary.GetGeneratedAtUnixNano())
		c.InFlight, c.InFlightTokens = sent+st.pending, sentTokens+st.pendingTokens
		if sent > 0 {
			c.InFlightAge = max(now.Sub(time.Unix(0, oldest)), 0)
		}
		c.Waiting, c.WaitingTokens = st.waiting+st.pending, st.waitingTokens+st.pendingTokens
	}
}

// forgetSketches drops the decoded sketches of clusters the last index does not have (gossip
// forgot them); t.mu must be held.
func (t *Table) forgetSketches() {
	for _, st := range t.states {
		if st.seen != t.seq && st.sketches.held() {
			st.sketches.reset(nil)
			t.sketchHolders--
		}
	}
}

// Models returns every base model and adapter served by a cluster with a fresh summary.
func (t *Table) Models() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, s := range t.src.Snapshot() {
		if s.Stale {
			continue
		}
		for _, m := range s.Summary.GetModels() {
			if m.GetReadyPods() == 0 {
				continue
			}
			add(m.GetName())
			for _, a := range m.GetAdapters() {
				add(a.GetName())
			}
		}
	}
	sort.Strings(out)
	return out
}

// Observe records a forwarded request's outcome (forward.Observer): passive health, the round
// trip it measured, and, for an accepted request, that it was sent (it is not in the cluster's
// summary yet) and, for a stream, that it waits for its first token.
func (t *Table) Observe(o forward.Outcome) {
	var fresh []string
	if !o.Abandoned && failure(o) { // it may eject the cluster: the cap needs the fresh clusters
		fresh = freshClusters(t.src.Snapshot())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	st := t.stateOf(o.Target.Cluster)
	tokens := int64(max(o.Target.PromptTokens, 0))
	st.pending = max(st.pending-1, 0)
	st.pendingTokens = max(st.pendingTokens-tokens, 0)
	if o.Abandoned { // the client left: nothing learned of the cluster
		return
	}
	if st.health.observe(o, now, t.cfg.Ejection, func() bool { return t.admitEjection(o.Target.Cluster, fresh, now) }) {
		t.refused(o.Target.Cluster, fresh, now)
	}
	t.markHot(st)
	if o.RTT > 0 {
		st.rtt.add(o.RTT, now, t.cfg.MeasuredRTT)
		t.lowerRTT(st)
	}
	if o.Status > 0 && !o.Retried {
		st.sends.add(now, o.Target.PromptTokens)
		if o.Streamed {
			st.waiting++
			st.waitingTokens += tokens
		}
	}
}

// Dispatched records that an attempt to target begins (forward.Dispatcher): until its outcome
// it counts as in flight and waiting for its first token, so that requests decided within one
// round trip of each other do not all see the same cluster as free.
func (t *Table) Dispatched(target forward.Target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stateOf(target.Cluster)
	t.markHot(st)
	st.pending++
	st.pendingTokens += int64(max(target.PromptTokens, 0))
}

// FirstToken records that a stream Observe counted as waiting has its first token, or ended
// without one (forward.FirstTokener).
func (t *Table) FirstToken(target forward.Target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.states[target.Cluster]; st != nil && st.waiting > 0 {
		st.waiting--
		st.waitingTokens = max(st.waitingTokens-int64(max(target.PromptTokens, 0)), 0)
		if st.waiting == 0 {
			st.waitingTokens = 0
		}
	}
}

// Sent records that a request was sent to cluster now.
func (t *Table) Sent(cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.stateOf(cluster)
	st.sends.add(t.cfg.Now(), 0)
	t.markHot(st)
}

var (
	_ forward.Observer     = (*Table)(nil)
	_ forward.FirstTokener = (*Table)(nil)
	_ forward.Dispatcher   = (*Table)(nil)
)

// stateOf returns the cluster's state, creating it; t.mu must be held.
func (t *Table) stateOf(cluster string) *clusterState {
	st := t.states[cluster]
	if st == nil {
		st = &clusterState{}
		t.states[cluster] = st
		if idx := t.idx.Load(); idx != nil {
			if ord, ok := idx.byName[cluster]; ok {
				st.seen, st.ord = idx.seq, ord
			}
		}
	}
	return st
}
