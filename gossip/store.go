package gossip

import (
	"fmt"
	"sort"
	"sync"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// entry is the newest summary known from one publishing node.
type entry struct {
	summary    *gossipv1.CapacitySummary
	receivedAt time.Time
	departedAt time.Time // zero while the node is a live member
	stale      bool      // last staleness reported to subscribers
}

// assembly collects the chunks of one summary sequence from one node.
type assembly struct {
	seq     uint64
	parts   [][]byte
	got     int
	bytes   int
	started time.Time
}

// outcome says what a chunk did to the store.
type outcome int

const (
	chunkStale     outcome = iota // older than what the store holds: dropped
	chunkDuplicate                // already held: dropped, not relayed
	chunkPartial                  // new piece of an incomplete summary: relay it
	chunkApplied                  // completed a newer summary: relay it
)

// store keeps the newest summary per node (newest sequence wins) and reassembles chunks. It is
// safe for concurrent use.
type store struct {
	mu      sync.Mutex
	limit   int
	entries map[string]*entry
	pending map[string]*assembly
}

func newStore(limit int) *store {
	return &store{limit: limit, entries: map[string]*entry{}, pending: map[string]*assembly{}}
}

// addChunk records a chunk received at now. When it completes a summary, the decoded summary is
// applied and returned.
func (s *store) addChunk(c chunk, now time.Time) (outcome, *gossipv1.CapacitySummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[c.node]; e != nil && c.seq <= e.summary.GetSequence() {
		return chunkStale, nil, nil
	}
	a := s.pending[c.node]
	switch {
	case a == nil || c.seq > a.seq:
		a = &assembly{seq: c.seq, parts: make([][]byte, c.count), started: now}
		s.pending[c.node] = a
	case c.seq < a.seq:
		return chunkStale, nil, nil
	}
	if c.count != len(a.parts) {
		return chunkStale, nil, fmt.Errorf("%w: node %s sequence %d: chunk count %d, earlier %d", ErrMalformed, c.node, c.seq, c.count, len(a.parts))
	}
	if a.parts[c.index] != nil {
		return chunkDuplicate, nil, nil
	}
	if a.bytes+len(c.payload) > s.limit {
		delete(s.pending, c.node)
		return chunkStale, nil, fmt.Errorf("%w: node %s summary exceeds %d bytes", ErrMalformed, c.node, s.limit)
	}
	a.parts[c.index] = append([]byte(nil), c.payload...)
	a.got++
	a.bytes += len(c.payload)
	if a.got < len(a.parts) {
		return chunkPartial, nil, nil
	}
	delete(s.pending, c.node)
	return s.complete(c.node, a, now)
}

// complete decodes an assembled summary and applies it. Called with s.mu held.
func (s *store) complete(node string, a *assembly, now time.Time) (outcome, *gossipv1.CapacitySummary, error) {
	blob := make([]byte, 0, a.bytes)
	for _, p := range a.parts {
		blob = append(blob, p...)
	}
	sum, err := DecodeSummary(blob, s.limit)
	if err != nil {
		return chunkPartial, nil, fmt.Errorf("node %s sequence %d: %w", node, a.seq, err)
	}
	if sum.GetNode() != node || sum.GetSequence() != a.seq {
		return chunkPartial, nil, fmt.Errorf("%w: chunk header says %s/%d, summary %s/%d", ErrMalformed, node, a.seq, sum.GetNode(), sum.GetSequence())
	}
	s.applyLocked(sum, now)
	return chunkApplied, sum, nil
}

// apply stores sum when it is newer than what the store holds and reports whether it did.
func (s *store) apply(sum *gossipv1.CapacitySummary, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(sum, now)
}

func (s *store) applyLocked(sum *gossipv1.CapacitySummary, now time.Time) bool {
	node := sum.GetNode()
	e := s.entries[node]
	if e != nil && sum.GetSequence() <= e.summary.GetSequence() {
		return false
	}
	if a := s.pending[node]; a != nil && a.seq <= sum.GetSequence() {
		delete(s.pending, node)
	}
	next := &entry{summary: sum, receivedAt: now}
	if e != nil {
		next.departedAt = e.departedAt
	}
	s.entries[node] = next
	return true
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

// all returns the newest summary of every node, sorted by node name.
func (s *store) all() []*gossipv1.CapacitySummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*gossipv1.CapacitySummary, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e.summary)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetNode() < out[j].GetNode() })
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
	for node, a := range s.pending {
		if a.started.Before(abandonBefore) {
			delete(s.pending, node)
		}
	}
	return changed
}
