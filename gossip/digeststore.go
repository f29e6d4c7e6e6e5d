package gossip

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
	"time"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// maxDigestOrigins bounds the aggregators whose digests a node keeps (and whose chunks it
// assembles); past it the one heard from longest ago is dropped.
const maxDigestOrigins = 1024

// digestEntry is what a node holds of one aggregator's digests.
type digestEntry struct {
	// full is the newest full digest and fullBlob its encoded message.
	full     *gossipv1.RegionDigest
	fullBlob []byte
	// delta is the newest delta against full (nil when none is newer) and deltaBlob its message.
	delta     *gossipv1.RegionDigest
	deltaBlob []byte
	// current is the state: full, or full with delta applied.
	current    *gossipv1.RegionDigest
	receivedAt time.Time
	// orphan is the newest delta whose full digest is not held (yet), with its message.
	orphan     *gossipv1.RegionDigest
	orphanBlob []byte
}

// seq is the sequence of the newest digest held (0: only an orphan delta).
func (e *digestEntry) seq() uint64 { return e.current.GetSequence() }

// digestStore keeps the newest digest state per aggregator and reassembles digest chunks. It is
// safe for concurrent use.
type digestStore struct {
	mu      sync.Mutex
	limit   int
	entries map[string]*digestEntry // by origin
	pending map[string][]*assembly  // by origin, at most maxAssemblies each
	accept  func(d *gossipv1.RegionDigest, now time.Time) error
}

func newDigestStore(limit int) *digestStore {
	return &digestStore{limit: limit, entries: map[string]*digestEntry{}, pending: map[string][]*assembly{}}
}

// addChunk records a digest chunk received at now. When it completes a digest that passes the
// checks, the digest is applied (or parked) and its message returned.
func (s *digestStore) addChunk(c chunk, now time.Time) (outcome, *gossipv1.RegionDigest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[c.node]; e != nil && (c.seq <= e.seq() || (e.orphan != nil && c.seq == e.orphan.GetSequence())) {
		return chunkStale, nil, nil
	}
	if c.count == 1 {
		if len(c.payload) > s.limit {
			return chunkStale, nil, fmt.Errorf("%w: digest of %s exceeds %d bytes", ErrMalformed, c.node, s.limit)
		}
		return s.completeLocked(c.node, c.seq, bytes.Clone(c.payload), now)
	}
	if c.linked && c.index == 0 && c.digestOf() != c.head {
		return chunkForged, nil, nil
	}
	if _, ok := s.pending[c.node]; !ok && len(s.pending) >= maxDigestOrigins {
		s.dropOldestPending()
	}
	a, list := assemblyFor(s.pending[c.node], c, now)
	s.pending[c.node] = list
	out, err := a.add(c, s.limit)
	if err != nil || out != chunkPartial || !a.complete() {
		if err != nil {
			s.pending[c.node] = without(list, func(x *assembly) bool { return x == a })
		}
		return out, nil, err
	}
	s.pending[c.node] = without(list, func(x *assembly) bool { return x == a })
	if len(s.pending[c.node]) == 0 {
		delete(s.pending, c.node)
	}
	return s.completeLocked(c.node, c.seq, bytes.Join(a.parts, nil), now)
}

// dropOldestPending forgets the assemblies of the origin whose oldest one started first.
func (s *digestStore) dropOldestPending() {
	var oldest string
	var at time.Time
	for origin, list := range s.pending {
		for _, a := range list {
			if oldest == "" || a.started.Before(at) {
				oldest, at = origin, a.started
			}
		}
	}
	delete(s.pending, oldest)
}

// completeLocked decodes, checks and applies a complete digest message of origin's sequence seq.
func (s *digestStore) completeLocked(
	origin string,
	seq uint64,
	blob []byte,
	now time.Time,
) (outcome, *gossipv1.RegionDigest, error) {
	d, err := DecodeDigest(blob, s.limit)
	if err != nil {
		return chunkStale, nil, err
	}
	if d.GetOrigin() != origin || d.GetSequence() != seq {
		return chunkStale, nil, fmt.Errorf("%w: digest chunk header says %s/%d, digest %s/%d", ErrMalformed,
			origin, seq, d.GetOrigin(), d.GetSequence())
	}
	if s.accept != nil {
		if err := s.accept(d, now); err != nil {
			return chunkRejected, nil, err
		}
	}
	return s.applyLocked(d, blob, now), d, nil
}

// add applies a complete digest that passed its checks (one this node publishes or relays, or
// one from push/pull, checked by the caller).
func (s *digestStore) add(d *gossipv1.RegionDigest, blob []byte, now time.Time) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyLocked(d, blob, now)
}

// applyLocked stores d: a full digest newer than the state replaces it (and takes up a parked
// delta against it), a delta against the full digest held rebuilds the state, a delta against a
// newer full digest than the one held is parked.
func (s *digestStore) applyLocked(d *gossipv1.RegionDigest, blob []byte, now time.Time) outcome {
	e := s.entries[d.GetOrigin()]
	if e == nil {
		if len(s.entries) >= maxDigestOrigins {
			s.dropOldestEntry()
		}
		e = &digestEntry{}
		s.entries[d.GetOrigin()] = e
	}
	if d.GetSequence() <= e.seq() {
		return chunkStale
	}
	if d.GetBaseSequence() == 0 {
		e.full, e.fullBlob, e.delta, e.deltaBlob, e.current = d, blob, nil, nil, d
		e.receivedAt = now
		if o, ob := e.orphan, e.orphanBlob; o != nil && o.GetBaseSequence() <= d.GetSequence() {
			e.orphan, e.orphanBlob = nil, nil
			if o.GetBaseSequence() == d.GetSequence() && o.GetSequence() > d.GetSequence() {
				e.delta, e.deltaBlob, e.current = o, ob, rebuildDigest(d, o)
			}
		}
		return chunkApplied
	}
	switch {
	case e.full != nil && d.GetBaseSequence() == e.full.GetSequence():
		e.delta, e.deltaBlob, e.current, e.receivedAt = d, blob, rebuildDigest(e.full, d), now
		return chunkApplied
	case e.full == nil || d.GetBaseSequence() > e.full.GetSequence():
		if e.orphan == nil || d.GetSequence() > e.orphan.GetSequence() {
			e.orphan, e.orphanBlob = d, blob
		}
		return chunkParked
	}
	return chunkStale // against an older full digest than the one held
}

// dropOldestEntry forgets the aggregator heard from longest ago.
func (s *digestStore) dropOldestEntry() {
	var oldest string
	var at time.Time
	for origin, e := range s.entries {
		if oldest == "" || e.receivedAt.Before(at) {
			oldest, at = origin, e.receivedAt
		}
	}
	delete(s.entries, oldest)
}

// heldDigest is one aggregator's digest state as the store holds it.
type heldDigest struct {
	current             *gossipv1.RegionDigest
	fullBlob, deltaBlob []byte
	receivedAt          time.Time
}

// all returns every aggregator's state (orphan deltas aside), ordered by origin.
func (s *digestStore) all() []heldDigest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]heldDigest, 0, len(s.entries))
	for _, e := range s.entries {
		if e.current != nil {
			out = append(out, heldDigest{current: e.current, fullBlob: e.fullBlob, deltaBlob: e.deltaBlob,
				receivedAt: e.receivedAt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].current.GetOrigin() < out[j].current.GetOrigin() })
	return out
}

// forget drops the aggregators last heard from before cutoff; it reports whether any was dropped.
func (s *digestStore) forget(cutoff time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := false
	for origin, e := range s.entries {
		if e.receivedAt.Before(cutoff) {
			delete(s.entries, origin)
			dropped = true
		}
	}
	for origin, list := range s.pending {
		s.pending[origin] = without(list, func(a *assembly) bool { return a.started.Before(cutoff) })
		if len(s.pending[origin]) == 0 {
			delete(s.pending, origin)
		}
	}
	return dropped
}

// recheck runs accept again on every state held (the full digest and delta it was built from)
// and drops the aggregators that fail it; it returns their names.
func (s *digestStore) recheck(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var dropped []string
	for origin, e := range s.entries {
		ok := e.full != nil && (s.accept == nil ||
			s.accept(e.full, now) == nil && (e.delta == nil || s.accept(e.delta, now) == nil))
		if !ok {
			delete(s.entries, origin)
			dropped = append(dropped, origin)
		}
	}
	sort.Strings(dropped)
	return dropped
}
