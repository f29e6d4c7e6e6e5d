package clustertable

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
)

// The candidate index. A view is not built from the gossip snapshot per request: the table keeps
// an index of the snapshot, rebuilt when the source changes, and per model asked about the entry
// of every cluster with that model's figures, its gateway URLs, its state and its decoded prefix
// sketch already filled in. A request copies the model's entries and applies only what changes
// between two summaries: the summaries' ages, drains, and this router's own state of each
// cluster (passive health, slow start, round trips, requests sent since the summary).
//
// An index is never changed once published (copy-on-write): a request loads the current one with
// one atomic read and no lock, and per model the entries are built once per index, by the first
// request for the model, and then shared. Only models some cluster lists are kept per name; a
// request for any other name reads the one entry list of "a model nobody lists", so names a
// client makes up cost no memory.
//
// When the index is rebuilt depends on the source:
//   - A source that signals changes (Subscribe, as gossip.Node does: a summary applied, a member's
//     state changed, a summary turned stale) is read again on the first view after a signal, but
//     not sooner than Config.IndexInterval after the last rebuild, and at least every
//     indexMaxAge (gossip's network-coordinate round trips move without a signal). Between two
//     rebuilds a summary's age is extrapolated from when the snapshot was taken, which is exact;
//     a change reaches the decisions at most IndexInterval after gossip applied it.
//   - Any other source is read per view and compared with the indexed snapshot (summaries,
//     staleness, membership and round trips; not the ages, which are taken from the new
//     snapshot): the index is rebuilt when they differ, so a view is what the per-request
//     snapshot gives.

// indexMaxAge bounds how long an index of a signalling source is used without a rebuild.
const indexMaxAge = time.Second

// DefaultIndexInterval is the least time between two rebuilds of the index of a source that
// signals changes (Config.IndexInterval's default).
const DefaultIndexInterval = 20 * time.Millisecond

// subscriber is a Source that signals changes; gossip.Node implements it.
type subscriber interface {
	Subscribe() (<-chan struct{}, func())
}

// index is what the table knows from one snapshot of its source.
type index struct {
	snap   []gossip.Summary // a copy of what the source returned
	sorted []gossip.Summary // snap sorted by cluster (snap itself when it was)
	perm   []int            // sorted[i] is snap[perm[i]]; nil when snap was sorted
	at     time.Time        // when the snapshot was taken
	listed map[string]bool  // the models and adapters some summary lists
	// models holds, per model asked about, every cluster's entry and bounds (see
	// Table.modelEntries); "" is that of a model no summary lists.
	models atomic.Pointer[map[string]*modelIndex]
	mu     sync.Mutex // serialises building a model's entries

	// Per cluster, in the order of every model's entries (a cluster's ordinal): set by rebuild
	// under the table's lock before the index is published (subset.go).
	seq     uint64            // the table's seq when it was built
	byName  map[string]int    // ordinals
	best    []*gossip.Summary // the chosen replica's summary, in sorted
	gens    []int64           // its generation time (Unix nanoseconds)
	priors  []time.Duration   // the prior of the round trip
	regions []int             // the position of the cluster's region in regionNames
	// regionNames lists the regions of the clusters, the router's own first when it has any.
	regionNames []string
	// rttLow is a floor of the cluster's round trip (the prior, or less if measured less),
	// lowered by Observe as measurements come: nanoseconds.
	rttLow []atomic.Int64
	// noted is set once every cluster's summary signal has been noted in its health (Claim's
	// note of the clusters a reduced decision leaves out: noting is idempotent).
	noted atomic.Bool
}

// modelIndex is one model's entries and, per cluster, the figures that bound its estimate.
type modelIndex struct {
	entries []Entry
	slots   []slot
	warm    atomic.Pointer[warmPicks] // the last reduced decision's picks
}

// warmPicks are the ordinals a reduced decision picked (Route offers them first).
type warmPicks struct {
	seq  uint64 // the index's
	ords []int
}

func newIndex(snap []gossip.Summary, now time.Time) *index {
	snap = slices.Clone(snap) // the source may change its slice in place
	idx := &index{snap: snap, sorted: snap, at: now, listed: map[string]bool{}}
	if !sortedByCluster(snap) {
		idx.perm = make([]int, len(snap))
		for i := range idx.perm {
			idx.perm[i] = i
		}
		slices.SortStableFunc(idx.perm, func(a, b int) int { return strings.Compare(snap[a].Cluster, snap[b].Cluster) })
		idx.sorted = make([]gossip.Summary, len(snap))
		for i, p := range idx.perm {
			idx.sorted[i] = snap[p]
		}
	}
	for i := range snap {
		for _, m := range snap[i].Summary.GetModels() {
			idx.listed[m.GetName()] = true
			for _, a := range m.GetAdapters() {
				idx.listed[a.GetName()] = true
			}
		}
	}
	empty := map[string]*modelIndex{}
	idx.models.Store(&empty)
	return idx
}

// age returns the current age of the summary at position i of idx.sorted: from snap, the source's
// newer snapshot of the same summaries, or extrapolated from when idx was built.
func (idx *index) age(i int, snap []gossip.Summary, now time.Time) time.Duration {
	if snap == nil {
		return idx.sorted[i].Age + max(now.Sub(idx.at), 0)
	}
	if idx.perm != nil {
		i = idx.perm[i]
	}
	return snap[i].Age
}

// sameSnapshot reports whether b holds the summaries of a, in the same order, with the same
// staleness, membership and round trips (ages aside).
func sameSnapshot(a, b []gossip.Summary) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Summary != y.Summary || x.Node != y.Node || x.Cluster != y.Cluster || x.Region != y.Region ||
			x.Stale != y.Stale || x.State != y.State || x.RTT != y.RTT || x.RTTKnown != y.RTTKnown ||
			!x.ReceivedAt.Equal(y.ReceivedAt) {
			return false
		}
	}
	return true
}

// current returns the index to build a view from at now, rebuilding it when due, and the source's
// snapshot when it was read for this view (nil when the index's ages are to be extrapolated).
func (t *Table) current(now time.Time) (*index, []gossip.Summary) {
	idx := t.idx.Load()
	if t.changes == nil {
		snap := t.src.Snapshot()
		if idx != nil && sameSnapshot(idx.snap, snap) {
			return idx, snap
		}
		return t.rebuild(snap, now), snap
	}
	if idx != nil && !t.due(idx, now) {
		return idx, nil
	}
	if !t.building.TryLock() {
		if idx != nil { // another request is rebuilding it: this one uses the current index
			return idx, nil
		}
		t.building.Lock()
	}
	defer t.building.Unlock()
	if cur := t.idx.Load(); cur != idx {
		return cur, nil
	}
	select { // the signal is taken before the snapshot, so a change after it is not lost
	case <-t.changes:
	default:
	}
	return t.rebuild(t.src.Snapshot(), now), nil
}

// due reports whether the index of a signalling source is to be rebuilt at now.
func (t *Table) due(idx *index, now time.Time) bool {
	age := now.Sub(idx.at)
	return age >= indexMaxAge || age < 0 || (len(t.changes) > 0 && age >= t.cfg.IndexInterval)
}

// rebuild publishes a new index of snap, with its clusters' ordinals set in their states and
// its round-trip floors, and drops the decoded sketches of the clusters it no longer has
// (gossip forgot them).
func (t *Table) rebuild(snap []gossip.Summary, now time.Time) *index {
	idx := newIndex(snap, now)
	t.describe(idx)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	idx.seq = t.seq
	t.hot = t.hot[:0]
	for name, st := range t.states {
		st.hot = false
		ord, ok := idx.byName[name]
		if !ok {
			continue
		}
		st.seen, st.ord = t.seq, ord
		idx.rttLow[ord].Store(int64(t.rttFloor(st, time.Duration(idx.rttLow[ord].Load()))))
		if !t.quiet(st, idx, now) {
			t.markHot(st)
		}
	}
	t.forgetSketches()
	t.idx.Store(idx)
	return idx
}

// modelEntries returns every cluster's entry for model in idx, building them on the first call
// for the model. The entries are shared: callers copy them.
func (t *Table) modelEntries(idx *index, model string) []Entry {
	return t.modelIndex(idx, model).entries
}

// modelIndex returns model's entries and bounds in idx, building them on the first call for the
// model.
func (t *Table) modelIndex(idx *index, model string) *modelIndex {
	if !idx.listed[model] {
		model = ""
	}
	if m, ok := (*idx.models.Load())[model]; ok {
		return m
	}
	idx.mu.Lock()
	defer idx.mu.Unlock()
	cur := *idx.models.Load()
	if m, ok := cur[model]; ok {
		return m
	}
	entries := t.candidates(idx.sorted, model)
	t.prepare(entries)
	m := &modelIndex{entries: entries, slots: t.slots(idx, entries)}
	next := maps.Clone(cur)
	next[model] = m
	idx.models.Store(&next)
	return m
}

// prepare fills in each entry's cluster state and decoded prefix sketch, decoding the sketches
// the table does not hold yet (outside its lock) and keeping them for the next indexes.
func (t *Table) prepare(entries []Entry) {
	var misses []int
	t.mu.Lock()
	for i := range entries {
		e := &entries[i]
		e.state = t.stateOf(e.Cluster.Name)
		if e.model.GetPrefixSketch() == nil {
			continue
		}
		if e.bloom, e.known = e.state.sketches.get(e.Summary, e.model); !e.known {
			misses = append(misses, i)
		}
	}
	t.mu.Unlock()
	if len(misses) == 0 {
		return
	}
	for _, i := range misses {
		e := &entries[i]
		e.bloom, _ = sketch.FromProto(e.model.GetPrefixSketch()) // nil when invalid: nothing is cached
		e.known = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, i := range misses {
		e := &entries[i]
		if !e.state.sketches.held() {
			t.sketchHolders++
		}
		e.state.sketches.put(e.Summary, e.model, e.bloom)
	}
}
