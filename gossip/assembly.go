package gossip

import (
	"bytes"
	"fmt"
	"time"
)

// Reassembly limits. A node keeps several assemblies per publisher and kind (full summaries,
// deltas), keyed by sequence, chunk count and, for linked chunks, head: a chunk of a message that
// a gossip-key holder made up under a publisher's name starts an assembly of its own instead of
// holding back or corrupting the publisher's. Past maxAssemblies the oldest is dropped, so a forger
// must keep sending new messages faster than the publisher's chunks arrive to crowd a genuine one
// out, and memory stays bounded.
const (
	// maxAssemblies is the most incomplete messages kept per publisher and kind.
	maxAssemblies = 4
	// maxCandidates is the most distinct unchecked pieces kept for one index of a linked message
	// whose preceding chunk has not arrived (chunks of one packet arrive in any order).
	maxCandidates = 2
)

// assembly collects the chunks of one message (a summary or a delta) of one node.
type assembly struct {
	seq     uint64
	parts   [][]byte
	got     int
	bytes   int
	started time.Time

	// Linked messages: head names the message; parts[:verified] are checked, and expect is the
	// digest the next chunk, parts[verified], must have. Pieces that arrive before their
	// predecessor wait in candidates until it is checked.
	linked     bool
	head       digest
	verified   int
	expect     digest
	candidates map[int][]candidate
	candBytes  int
	// id identifies the message among those of its sequence (parkedID).
	id string
}

// candidate is a linked chunk that arrived before the chunk that names its digest.
type candidate struct {
	payload []byte
	link    digest
	d       digest
}

// newAssembly returns the empty assembly of the message c belongs to.
func newAssembly(c chunk, now time.Time) *assembly {
	a := &assembly{
		seq:     c.seq,
		parts:   make([][]byte, c.count),
		started: now,
		linked:  c.linked,
		head:    c.head,
		id:      parkedID(c),
	}
	if c.linked {
		a.expect = c.head
	}
	return a
}

// holds reports whether c belongs to a's message.
func (a *assembly) holds(c chunk) bool {
	return a.seq == c.seq && len(a.parts) == c.count && a.linked == c.linked && a.head == c.head
}

// complete reports whether every chunk has arrived (and, when linked, been checked).
func (a *assembly) complete() bool { return a.got == len(a.parts) }

// add records c, a chunk of a's message, within limit bytes in all. It returns chunkPartial when c
// was new and is kept (to be relayed), chunkDuplicate when it adds nothing, chunkForged when it
// is a linked chunk whose digest is not the one its predecessor names, and an error when the
// message exceeds limit.
func (a *assembly) add(c chunk, limit int) (outcome, error) {
	if !a.linked {
		if a.parts[c.index] != nil {
			return chunkDuplicate, nil
		}
		return a.store(c.index, c.payload, limit)
	}
	switch {
	case c.index < a.verified:
		return chunkDuplicate, nil
	case c.index > a.verified:
		return a.addCandidate(c, limit), nil
	}
	d := c.digestOf()
	if d != a.expect {
		return chunkForged, nil
	}
	if out, err := a.store(c.index, c.payload, limit); err != nil {
		return out, err
	}
	a.verified, a.expect = a.verified+1, c.link
	return chunkPartial, a.promote(limit)
}

// store keeps payload as part i.
func (a *assembly) store(i int, payload []byte, limit int) (outcome, error) {
	if a.bytes+len(payload) > limit {
		return chunkStale, fmt.Errorf("%w: summary exceeds %d bytes", ErrMalformed, limit)
	}
	a.parts[i] = append([]byte(nil), payload...)
	a.got++
	a.bytes += len(payload)
	return chunkPartial, nil
}

// addCandidate keeps c, which arrived before its predecessor was checked, unless an identical
// piece is kept already or the index has maxCandidates pieces (the genuine one will come again
// from another relay once its predecessor is in, and is then checked on arrival).
func (a *assembly) addCandidate(c chunk, limit int) outcome {
	d := c.digestOf()
	for _, k := range a.candidates[c.index] {
		if k.d == d {
			return chunkDuplicate
		}
	}
	if len(a.candidates[c.index]) >= maxCandidates || a.candBytes+len(c.payload) > limit {
		return chunkDuplicate
	}
	if a.candidates == nil {
		a.candidates = map[int][]candidate{}
	}
	a.candidates[c.index] = append(a.candidates[c.index], candidate{payload: bytes.Clone(c.payload), link: c.link, d: d})
	a.candBytes += len(c.payload)
	return chunkPartial
}

// promote moves waiting candidates into place for as long as the next one's digest is expected.
func (a *assembly) promote(limit int) error {
	for a.verified < len(a.parts) {
		ks, ok := a.candidates[a.verified]
		if !ok {
			return nil
		}
		delete(a.candidates, a.verified)
		for _, k := range ks {
			a.candBytes -= len(k.payload)
		}
		i := a.verified
		found := false
		for _, k := range ks {
			if k.d == a.expect {
				if _, err := a.store(i, k.payload, limit); err != nil {
					return err
				}
				a.verified, a.expect, found = i+1, k.link, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return nil
}

// assemblyFor returns the assembly of c's message among list, creating it (and dropping the
// oldest when list is full) when there is none. It returns the list as it now is.
func assemblyFor(list []*assembly, c chunk, now time.Time) (*assembly, []*assembly) {
	for _, a := range list {
		if a.holds(c) {
			return a, list
		}
	}
	if len(list) >= maxAssemblies {
		oldest := 0
		for i, a := range list {
			if a.started.Before(list[oldest].started) {
				oldest = i
			}
		}
		list = append(list[:oldest], list[oldest+1:]...)
	}
	a := newAssembly(c, now)
	return a, append(list, a)
}

// without returns list without the assemblies for which drop returns true.
func without(list []*assembly, drop func(*assembly) bool) []*assembly {
	out := list[:0]
	for _, a := range list {
		if !drop(a) {
			out = append(out, a)
		}
	}
	clear(list[len(out):])
	return out
}
