package engine

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// Clone returns a deep copy of the simulator: virtual clock, pending arrivals, the engine's KV
// block pool (reference counts, free list, LRU order and prefix-hash index), adapter slots,
// waiting and running sequences, statistics and the jitter generator's state. Given the same
// submissions, the clone evolves exactly as the original would, token time for token time, and
// running or changing either never affects the other (they share only the read-only prompt bytes
// and prefix hashes of requests). Handles returned by the original's Submit follow the original;
// use CloneMapped to follow the same requests in the clone.
func (s *Simulator) Clone() *Simulator {
	return s.clone(nil)
}

// CloneMapped is Clone that also returns, for every request not yet finished in the original
// (pending, waiting or running), the clone's handle of that request keyed by the original's handle.
func (s *Simulator) CloneMapped() (*Simulator, map[*Handle]*Handle) {
	handles := map[*Handle]*Handle{}
	return s.clone(handles), handles
}

func (s *Simulator) clone(handles map[*Handle]*Handle) *Simulator {
	c := &Simulator{eng: s.eng.clone(handles), clock: s.clock, order: s.order, planned: s.planned}
	c.arrivals = make([]arrival, len(s.arrivals), cap(s.arrivals))
	for i, a := range s.arrivals {
		a.h = a.h.clone(nil, handles)
		c.arrivals[i] = a
	}
	return c
}

// clone copies the engine's state under its lock. A sequence's handle is cloned with it and
// recorded in handles when that map is not nil.
func (e *Engine) clone(handles map[*Handle]*Handle) *Engine {
	e.mu.Lock()
	defer e.mu.Unlock()
	pcg := *e.pcg
	c := &Engine{
		cfg: e.cfg, log: e.log, watermark: e.watermark, wake: make(chan struct{}, 1),
		pool: e.pool.clone(), lora: e.lora.clone(), pcg: &pcg, rng: rand.New(&pcg),
		model: e.model, batch: e.batch, stats: e.stats.clone(), lastWarn: e.lastWarn,
	}
	var seqs map[*seq]*seq // only needed to remap a planned step (between plan and commit)
	if len(e.step) > 0 {
		seqs = make(map[*seq]*seq, len(e.waiting)+len(e.running))
	}
	c.waiting = cloneSeqs(e.waiting, seqs, handles)
	c.running = cloneSeqs(e.running, seqs, handles)
	c.step = make([]stepEntry, len(e.step), cap(e.step))
	for i, en := range e.step {
		s, ok := seqs[en.s]
		if !ok { // cancelled during the step: no longer listed, still referenced
			s = en.s.clone(handles)
		}
		en.s = s
		c.step[i] = en
	}
	return c
}

func cloneSeqs(list []*seq, seqs map[*seq]*seq, handles map[*Handle]*Handle) []*seq {
	out := make([]*seq, len(list), cap(list))
	for i, s := range list {
		out[i] = s.clone(handles)
		if seqs != nil {
			seqs[s] = out[i]
		}
	}
	return out
}

// clone copies a sequence and its handle. Request and hashes are never modified after submission
// and stay shared.
func (s *seq) clone(handles map[*Handle]*Handle) *seq {
	c := *s
	c.blocks = slices.Clone(s.blocks)
	c.h = s.h.clone(&c, handles)
	return &c
}

// clone returns a new handle with a copy of h's progress, attached to sequence s (nil while the
// request has not reached the engine).
func (h *Handle) clone(s *seq, handles map[*Handle]*Handle) *Handle {
	h.mu.Lock()
	p := h.p
	h.mu.Unlock()
	p.TokenTimes = slices.Clone(p.TokenTimes)
	c := &Handle{notify: make(chan struct{}, 1), p: p, seq: s}
	if handles != nil {
		handles[h] = c
	}
	return c
}

func (p *blockPool) clone() *blockPool {
	c := *p
	c.refs, c.hash = slices.Clone(p.refs), slices.Clone(p.hash)
	c.prev, c.next = slices.Clone(p.prev), slices.Clone(p.next)
	c.empty = slices.Clone(p.empty)
	c.index = maps.Clone(p.index)
	c.kv = nil // a clone is a what-if: it publishes nothing
	return &c
}

func (l *loraSlots) clone() *loraSlots {
	c := *l
	c.resident = slices.Clone(l.resident)
	c.running, c.waiting = maps.Clone(l.running), maps.Clone(l.waiting)
	return &c
}

func (st Stats) clone() Stats {
	st.Finished = maps.Clone(st.Finished)
	st.TTFT, st.ITL, st.Lag = st.TTFT.clone(), st.ITL.clone(), st.Lag.clone()
	st.E2E, st.Queue, st.Prefill = st.E2E.clone(), st.Queue.clone(), st.Prefill.clone()
	st.Decode, st.Inference = st.Decode.clone(), st.Inference.clone()
	st.IterationTokens = st.IterationTokens.clone()
	return st
}
