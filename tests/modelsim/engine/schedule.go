package engine

import (
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// plan schedules the next step: running sequences decode (one token each) or continue their
// prefill chunk, then waiting sequences are admitted while blocks, max_num_seqs, adapter slots and
// the token budget allow. It returns the step's duration, or false when there is nothing to run.
// The plan is kept in e.step until commit.
func (e *Engine) plan() (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.step, e.batch = e.step[:0], physics.Batch{}
	budget := e.cfg.Profile.MaxBatchedTokens
	budget = e.scheduleDecodes(budget)
	budget = e.schedulePrefills(budget)
	e.admit(budget)
	if len(e.step) == 0 {
		return 0, false
	}
	return e.stepDuration(), true
}

func (e *Engine) scheduleDecodes(budget int) int {
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		if s.computed < s.target {
			continue
		}
		if !e.ensureBlocks(s, s.computed+1) {
			break // s was the newest sequence and preempted itself
		}
		e.step = append(e.step, stepEntry{s: s, n: 1, decode: true})
		e.batch.AddDecode(s.computed)
		budget--
	}
	return budget
}

func (e *Engine) schedulePrefills(budget int) int {
	for _, s := range e.running {
		if budget <= 0 {
			break
		}
		if s.computed >= s.target {
			continue
		}
		n := min(s.target-s.computed, budget)
		e.step = append(e.step, stepEntry{s: s, n: n})
		e.batch.AddPrefill(s.computed, n)
		budget -= n
	}
	return budget
}

// ensureBlocks gives s enough blocks for tokens, preempting the newest running sequences when the
// cache is full. It returns false when s itself had to be preempted.
func (e *Engine) ensureBlocks(s *seq, tokens int) bool {
	for len(s.blocks) < blocksFor(tokens) {
		if b := e.pool.alloc(); b >= 0 {
			s.blocks = append(s.blocks, b)
			continue
		}
		victim := e.running[len(e.running)-1]
		e.preempt(victim)
		if victim == s {
			return false
		}
	}
	return true
}

// preempt frees the blocks of v, the newest running sequence, and puts it back at the head of the
// queue to be recomputed (prompt and generated tokens) later, as vLLM does.
func (e *Engine) preempt(v *seq) {
	e.running = e.running[:len(e.running)-1]
	e.pool.release(v.blocks)
	v.blocks = v.blocks[:0]
	v.computed, v.registered = 0, 0
	v.target = v.req.PromptTokens + v.generated
	v.state = stateWaiting
	v.preemptions++
	e.stats.Preemptions++
	e.lora.stop(v.req.Adapter)
	e.lora.addWaiting(v.req.Adapter, 1)
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[1:], e.waiting)
	e.waiting[0] = v
	v.h.setPreemptions(v.preemptions)
}

// admit moves waiting sequences into the running batch in arrival order. A sequence whose adapter
// has no slot is skipped; one that does not fit in the KV cache stops admission (first come, first
// served), as do max_num_seqs and the token budget.
func (e *Engine) admit(budget int) {
	kept := e.waiting[:0]
	for i, s := range e.waiting {
		if budget <= 0 || len(e.running) >= e.cfg.Profile.MaxNumSeqs {
			kept = append(kept, e.waiting[i:]...)
			break
		}
		if !e.lora.canRun(s.req.Adapter) {
			kept = append(kept, s)
			continue
		}
		if !e.allocate(s) {
			kept = append(kept, e.waiting[i:]...)
			break
		}
		e.start(s)
		n := min(s.target-s.computed, budget)
		e.step = append(e.step, stepEntry{s: s, n: n})
		e.batch.AddPrefill(s.computed, n)
		budget -= n
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
}

func (e *Engine) start(s *seq) {
	s.state = stateRunning
	e.running = append(e.running, s)
	e.lora.addWaiting(s.req.Adapter, -1)
	if e.lora.start(s.req.Adapter) {
		e.batch.AdapterLoads++
	}
}

// allocate takes the cached prefix blocks of s and fresh blocks for the rest of its tokens, keeping
// the watermark free. The last prompt token is always computed, so a fully cached prompt still
// runs one token of prefill.
func (e *Engine) allocate(s *seq) bool {
	hashes := s.hashes[:min(len(s.hashes), (s.target-1)/profile.BlockSize)]
	hits, idle := e.pool.lookup(hashes)
	need := blocksFor(s.target) - hits
	if e.pool.free()-idle-need < e.watermark {
		return false
	}
	for _, h := range hashes[:hits] {
		s.blocks = append(s.blocks, e.pool.acquire(h))
	}
	for range need {
		s.blocks = append(s.blocks, e.pool.alloc())
	}
	cached := hits * profile.BlockSize
	s.computed, s.registered = cached, hits
	if s.req.RemoteKV && !s.admitted {
		s.computed = max(cached, s.target-1) // pulled from the prefill server; the last token runs here
	}
	e.stats.PrefixQueries += uint64(s.target)
	e.stats.PrefixHits += uint64(cached)
	if !s.admitted {
		s.admitted = true
		e.stats.PromptTokens += uint64(s.req.PromptTokens)
		s.h.setCached(cached)
	}
	return true
}

// stepDuration is the physics model's time for the planned batch, with seeded jitter.
func (e *Engine) stepDuration() time.Duration {
	return e.model.Jittered(e.model.StepTime(e.batch), e.rng)
}

// commit applies the planned step, which ended at simulated time end: computed tokens advance,
// full prompt blocks enter the prefix cache, sequences that finished their prefill or decoded emit
// a token, and finished sequences free their blocks.
func (e *Engine) commit(end time.Duration, dur time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Steps++
	e.stats.StepTime += dur
	e.stats.IterationTokens.observeValue(float64(e.batch.PrefillTokens + e.batch.DecodeSeqs))
	finished := false
	for _, en := range e.step {
		s := en.s
		if s.state != stateRunning {
			continue // cancelled during the step
		}
		if s.scheduled < 0 {
			s.scheduled = end - dur
		}
		s.computed += en.n
		e.register(s)
		if s.computed >= s.target {
			finished = e.emit(s, end) || finished
		}
	}
	clear(e.step)
	e.step = e.step[:0]
	if finished {
		e.dropFinished()
	}
}

func (e *Engine) register(s *seq) {
	full := min(s.computed/profile.BlockSize, len(s.hashes))
	for k := s.registered; k < full; k++ {
		if e.pool.register(s.blocks[k], s.hashes[k]) && e.pool.kv != nil && s.req.BlockHashes != nil {
			e.storedEvent(s, k)
		}
	}
	s.registered = max(s.registered, full)
}

// emit records one generated token of s at time end and reports whether s finished.
func (e *Engine) emit(s *seq, end time.Duration) bool {
	s.generated++
	e.stats.GenerationTokens++
	if s.generated == 1 {
		s.firstToken = end
		e.stats.TTFT.observe(end - s.arrival)
	} else {
		e.stats.ITL.observe(end - s.lastToken)
	}
	s.lastToken = end
	done := s.generated >= s.req.MaxTokens
	if done {
		s.state = stateDone
		e.pool.release(s.blocks)
		s.blocks = nil
		e.lora.stop(s.req.Adapter)
		e.stats.Finished[s.req.FinishReason]++
		e.observeFinished(s, end)
	}
	s.h.setToken(s.generated, end, s.req.RecordTimes, done, s.req.FinishReason)
	return done
}

func (e *Engine) dropFinished() {
	kept := e.running[:0]
	for _, s := range e.running {
		if s.state == stateRunning {
			kept = append(kept, s)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// observeFinished records the phase times of s, which produced its last token at end.
func (e *Engine) observeFinished(s *seq, end time.Duration) {
	st := &e.stats
	queued := s.arrival + e.model.APIOverhead(s.req.PromptTokens)
	st.E2E.observe(end - s.arrival)
	st.Queue.observe(max(s.scheduled-queued, 0))
	st.Prefill.observe(s.firstToken - s.scheduled)
	st.Decode.observe(end - s.firstToken)
	st.Inference.observe(end - s.scheduled)
}
