package gossip

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// entry is the newest summary known from one publishing node.
type entry struct {
	summary *gossipv1.CapacitySummary
	// base is the complete summary the node's deltas are expected against: the newest one known
	// to have been published in full (or summary itself). A delta applies when its base sequence
	// is that of base or summary.
	base       *gossipv1.CapacitySummary
	receivedAt time.Time
	departedAt time.Time // zero while the node is a live member
	stale      bool      // last staleness reported to subscribers
}

// heldSummary is a node's newest summary and, when it was rebuilt from a delta, the base it was
// rebuilt from (nil otherwise).
type heldSummary struct {
	summary, base *gossipv1.CapacitySummary
}

// parkedDelta is a node's newest delta whose base this node does not hold (yet).
type parkedDelta struct {
	delta *gossipv1.SummaryDelta
	// id tells the parked message's chunks from other messages under the same sequence (see
	// parkedID), so that they count as duplicates and are not relayed again.
	id string
	at time.Time
	// since is when the first delta against the same base was parked.
	since time.Time
}

// pendingKey names an assembly: full summaries and deltas of a node assemble apart, because a
// delta's base may still be in flight.
type pendingKey struct {
	node  string
	delta bool
}

// outcome says what a chunk did to the store.
type outcome int

const (
	chunkStale      outcome = iota // older than what the store holds: dropped
	chunkDuplicate                 // already held: dropped, not relayed
	chunkPartial                   // new piece of an incomplete summary: relay it
	chunkApplied                   // completed a newer summary: relay it
	chunkParked                    // completed a delta whose base is not held (yet): relay it
	chunkBaseMissed                // as chunkParked, and the base is overdue: ask for a full summary
	chunkRejected                  // completed a summary that failed its checks (clock, verifier): dropped, not relayed
	chunkForged                    // a linked chunk whose digest is not the one its message names: dropped, not relayed
)

// baseGrace is how long after a full summary (by its publisher's sequence clock) a receiver may
// still be waiting for it to arrive; a delta whose base is older than that and not held means the
// receiver missed the full summary.
const baseGrace = 3 * time.Second

// baseWaitFor is how long a receiver holding deltas against a base it has seen no chunk of waits
// for that base (by its own clock, from the first such delta) before it counts the base as
// missed: five gossip rounds, between 250 ms and baseGrace. A delta is sent after its base and
// with fewer retransmissions, so once one has arrived the base, unless lost, arrives within a
// few rounds; the sequence-clock grace alone made a receiver that missed a base (a gateway's
// first full summary, sent before the receiver was in its member list) wait up to 3 s more.
func baseWaitFor(gossipInterval time.Duration) time.Duration {
	return min(max(5*gossipInterval, 250*time.Millisecond), baseGrace)
}

// store keeps the newest summary per node (newest sequence wins), reassembles chunks and applies
// deltas. It is safe for concurrent use.
type store struct {
	mu      sync.Mutex
	limit   int
	entries map[string]*entry
	pending map[pendingKey][]*assembly // at most maxAssemblies per key
	parked  map[string]parkedDelta
	// baseWait is the receiver-side wait for a missing base (baseWaitFor); 0 leaves only the
	// sequence-clock grace.
	baseWait time.Duration
	// accept checks every summary before it is stored (see Node.accept); nil accepts all.
	accept func(s *gossipv1.CapacitySummary, now time.Time) error
}

func newStore(limit int) *store {
	return &store{
		limit:   limit,
		entries: map[string]*entry{},
		pending: map[pendingKey][]*assembly{},
		parked:  map[string]parkedDelta{},
	}
}

// addChunk records a chunk received at now. When it completes a summary, the decoded summary is
// applied and returned.
func (s *store) addChunk(c chunk, now time.Time) (outcome, *gossipv1.CapacitySummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[c.node]; e != nil && c.seq <= e.summary.GetSequence() {
		return chunkStale, nil, nil
	}
	// A parked delta (its base not held, so unverified) does not make other deltas of the node
	// look stale: a forged one, its sequence ahead, would hold the real ones back.
	if p, ok := s.parked[c.node]; ok && c.delta && c.seq == p.delta.GetSequence() && p.id == parkedID(c) {
		return chunkDuplicate, nil, nil
	}
	if c.count == 1 {
		return s.completeSingle(c, now)
	}
	if c.linked && c.index == 0 && c.digestOf() != c.head {
		return chunkForged, nil, nil
	}
	key := pendingKey{node: c.node, delta: c.delta}
	a, list := assemblyFor(s.pending[key], c, now)
	s.pending[key] = list
	out, err := a.add(c, s.limit)
	if err != nil {
		s.pending[key] = without(list, func(x *assembly) bool { return x == a })
		return out, nil, fmt.Errorf("node %s sequence %d: %w", c.node, c.seq, err)
	}
	if out != chunkPartial || !a.complete() {
		return out, nil, nil
	}
	s.pending[key] = without(list, func(x *assembly) bool { return x == a })
	if c.delta {
		return s.completeDelta(c.node, a, now)
	}
	return s.complete(c.node, a, now)
}

// completeSingle applies a summary or delta that came in one chunk, whether or not other ones
// are still being assembled: an incomplete assembly (perhaps forged, its sequence merely within
// the clock skew) never holds back a complete message, and a one-chunk message drops no assembly
// before it has been applied. Called with s.mu held.
func (s *store) completeSingle(c chunk, now time.Time) (outcome, *gossipv1.CapacitySummary, error) {
	if len(c.payload) > s.limit {
		return chunkStale, nil, fmt.Errorf("%w: node %s summary exceeds %d bytes", ErrMalformed, c.node, s.limit)
	}
	a := &assembly{
		seq:     c.seq,
		parts:   [][]byte{append([]byte(nil), c.payload...)},
		got:     1,
		bytes:   len(c.payload),
		started: now,
		id:      parkedID(c),
	}
	if c.delta {
		return s.completeDelta(c.node, a, now)
	}
	return s.complete(c.node, a, now)
}

// parkedID identifies the message c belongs to among those of its sequence: its head when linked,
// its payload when it is the only chunk, nothing (the sequence alone) for an unlinked message of
// several chunks.
func parkedID(c chunk) string {
	switch {
	case c.linked:
		return string(c.head[:])
	case c.count == 1:
		return string(c.payload)
	}
	return ""
}

// joined returns the assembled blob: the single part itself, or the parts concatenated.
func (a *assembly) joined() []byte {
	if len(a.parts) == 1 {
		return a.parts[0]
	}
	blob := make([]byte, 0, a.bytes)
	for _, p := range a.parts {
		blob = append(blob, p...)
	}
	return blob
}

// complete decodes an assembled summary and applies it. Called with s.mu held.
func (s *store) complete(node string, a *assembly, now time.Time) (outcome, *gossipv1.CapacitySummary, error) {
	sum, err := DecodeSummary(a.joined(), s.limit)
	if err != nil {
		return chunkPartial, nil, fmt.Errorf("node %s sequence %d: %w", node, a.seq, err)
	}
	if sum.GetNode() != node || sum.GetSequence() != a.seq {
		return chunkPartial, nil, fmt.Errorf(
			"%w: chunk header says %s/%d, summary %s/%d",
			ErrMalformed,
			node,
			a.seq,
			sum.GetNode(),
			sum.GetSequence(),
		)
	}
	if err := s.check(sum, now); err != nil {
		return chunkRejected, nil, err
	}
	s.applyLocked(heldSummary{summary: sum}, now)
	return chunkApplied, s.entries[node].summary, nil
}

// completeDelta decodes an assembled delta and applies it, or parks it until its base arrives.
// Called with s.mu held.
func (s *store) completeDelta(node string, a *assembly, now time.Time) (outcome, *gossipv1.CapacitySummary, error) {
	d, err := decodeDelta(a.joined(), node, a.seq, s.limit)
	if err != nil {
		return chunkPartial, nil, fmt.Errorf("node %s delta %d: %w", node, a.seq, err)
	}
	e := s.entries[node]
	if base := e.deltaBase(d.GetBaseSequence()); base != nil {
		sum, err := applyDelta(base, d)
		if err != nil {
			return chunkPartial, nil, fmt.Errorf("node %s delta %d: %w", node, a.seq, err)
		}
		if err := s.check(sum, now); err != nil {
			return chunkRejected, nil, err
		}
		s.applyLocked(heldSummary{summary: sum, base: base}, now)
		return chunkApplied, sum, nil
	}
	if e != nil && e.base != nil && d.GetBaseSequence() < e.base.GetSequence() {
		return chunkStale, nil, nil // against a base older than ours: we will never hold it
	}
	since := now
	if p, ok := s.parked[node]; ok {
		if p.delta.GetSequence() > d.GetSequence() {
			return chunkStale, nil, nil // a newer delta is parked
		}
		if p.delta.GetBaseSequence() == d.GetBaseSequence() {
			since = p.since
		}
	}
	s.parked[node] = parkedDelta{delta: d, id: a.id, at: now, since: since}
	if d.GetSequence()-d.GetBaseSequence() >= uint64(baseGrace) {
		return chunkBaseMissed, nil, nil
	}
	// Waited a few rounds with no chunk of the base arriving: lost, not late. A base whose chunks
	// are still arriving (a large summary takes rounds) is waited for up to the grace.
	if s.baseWait > 0 && now.Sub(since) >= s.baseWait {
		if !slices.ContainsFunc(
			s.pending[pendingKey{node: node}],
			func(a *assembly) bool { return a.seq == d.GetBaseSequence() },
		) {
			return chunkBaseMissed, nil, nil
		}
	}
	return chunkParked, nil, nil
}

// deltaBase returns the complete summary with sequence seq that e holds, or nil.
func (e *entry) deltaBase(seq uint64) *gossipv1.CapacitySummary {
	switch {
	case e == nil:
		return nil
	case e.base != nil && e.base.GetSequence() == seq:
		return e.base
	case e.summary.GetSequence() == seq:
		return e.summary
	}
	return nil
}

// apply stores sum, a complete summary that is its own base, when it is newer than what the store
// holds, and reports whether it did.
func (s *store) apply(sum *gossipv1.CapacitySummary, now time.Time) bool {
	return s.applyHeld(heldSummary{summary: sum}, now)
}

// applyHeld stores h.summary when it is newer than what the store holds, and h.base (nil: the
// summary itself) as the base for the node's deltas when it is newer than the one held. It
// reports whether the node's summary changed (a parked delta that now applies counts).
func (s *store) applyHeld(h heldSummary, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(h, now)
}

func (s *store) applyLocked(h heldSummary, now time.Time) bool {
	node := h.summary.GetNode()
	base := h.base
	if base == nil || base.GetSequence() >= h.summary.GetSequence() {
		base = h.summary
	}
	e := s.entries[node]
	applied := false
	switch {
	case e == nil || h.summary.GetSequence() > e.summary.GetSequence():
		if e != nil && e.base != nil && e.base.GetSequence() > base.GetSequence() {
			base = e.base
		}
		next := &entry{summary: h.summary, base: base, receivedAt: now}
		if e != nil {
			next.departedAt = e.departedAt
		}
		s.entries[node], e, applied = next, next, true
		for _, delta := range []bool{false, true} {
			key := pendingKey{node, delta}
			if list := without(
				s.pending[key],
				func(a *assembly) bool { return a.seq <= h.summary.GetSequence() },
			); len(
				list,
			) > 0 {
				s.pending[key] = list
			} else {
				delete(s.pending, key)
			}
		}
	case e.base == nil || base.GetSequence() > e.base.GetSequence():
		e.base = base // a newer base for a summary we already hold
	}
	return s.unparkLocked(e, now) || applied
}

// unparkLocked applies the node's parked delta when e now holds its base, and drops it when it is
// no longer newer than e's summary. It reports whether it applied it.
func (s *store) unparkLocked(e *entry, now time.Time) bool {
	node := e.summary.GetNode()
	p, ok := s.parked[node]
	if !ok {
		return false
	}
	if p.delta.GetSequence() <= e.summary.GetSequence() {
		delete(s.parked, node)
		return false
	}
	base := e.deltaBase(p.delta.GetBaseSequence())
	if base == nil {
		return false
	}
	delete(s.parked, node)
	sum, err := applyDelta(base, p.delta)
	if err != nil || s.check(sum, now) != nil {
		return false
	}
	e.summary, e.receivedAt = sum, now
	return true
}

// check runs the store's acceptance check on sum. Called with s.mu held.
func (s *store) check(sum *gossipv1.CapacitySummary, now time.Time) error {
	if s.accept == nil {
		return nil
	}
	return s.accept(sum, now)
}

// checkHeld checks a summary that arrived complete (push/pull) and, when it has one, its base: it
// returns the error of a rejected summary, and drops a rejected base from h.
func (s *store) checkHeld(h *heldSummary, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(h.summary, now); err != nil {
		return err
	}
	if h.base != nil && s.check(h.base, now) != nil {
		h.base = nil
	}
	return nil
}

// recheck runs the acceptance check again on every stored summary and forgets the nodes whose
// summary now fails it (a base that fails is dropped, its deltas then wait for the next full
// summary). It returns the nodes forgotten.
func (s *store) recheck(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var dropped []string
	for node, e := range s.entries {
		if s.check(e.summary, now) != nil {
			delete(s.entries, node)
			delete(s.parked, node)
			delete(s.pending, pendingKey{node: node})
			delete(s.pending, pendingKey{node: node, delta: true})
			dropped = append(dropped, node)
			continue
		}
		if e.base != nil && e.base != e.summary && s.check(e.base, now) != nil {
			e.base = nil
		}
	}
	sort.Strings(dropped)
	return dropped
}

// summaryOf returns the newest summary held from node, or nil.
func (s *store) summaryOf(node string) *gossipv1.CapacitySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[node]; e != nil {
		return e.summary
	}
	return nil
}

// newest returns the sequence of the newest summary held from node, or 0.
func (s *store) newest(node string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[node]; e != nil {
		return e.summary.GetSequence()
	}
	return 0
}

// all returns the newest summary of every node, with its base when that differs, sorted by node
// name.
func (s *store) all() []heldSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]heldSummary, 0, len(s.entries))
	for _, e := range s.entries {
		h := heldSummary{summary: e.summary}
		if e.base != nil && e.base.GetSequence() < e.summary.GetSequence() {
			h.base = e.base
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].summary.GetNode() < out[j].summary.GetNode() })
	return out
}

// markDeparted records that node left or died at now (zero now: it is alive again).
func (s *store) markDeparted(node string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[node]; e != nil {
		e.departedAt = now
	}
}

// entriesCopy returns a copy of every entry, keyed by node name.
func (s *store) entriesCopy() map[string]entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]entry, len(s.entries))
	for k, e := range s.entries {
		out[k] = *e
	}
	return out
}

// sweep drops entries for which forget returns true and assemblies started before abandonBefore,
// and updates each entry's stale flag with isStale. It reports whether any entry was dropped or
// changed staleness.
func (s *store) sweep(abandonBefore time.Time, forget, isStale func(entry) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for node, e := range s.entries {
		if forget(*e) {
			delete(s.entries, node)
			changed = true
			continue
		}
		if st := isStale(*e); st != e.stale {
			e.stale, changed = st, true
		}
	}
	for key, list := range s.pending {
		if list = without(list, func(a *assembly) bool { return a.started.Before(abandonBefore) }); len(list) > 0 {
			s.pending[key] = list
		} else {
			delete(s.pending, key)
		}
	}
	for node, p := range s.parked {
		if p.at.Before(abandonBefore) {
			delete(s.parked, node)
		}
	}
	return changed
}
