package engine

import "github.com/switchyard-dev/switchyard/tests/modelsim/profile"

// KVEventKind is the kind of a prefix-cache change, as vLLM's KV cache events name them.
type KVEventKind uint8

// The kinds of KVEvent.
const (
	// KVStored: a block entered the prefix cache (vLLM's BlockStored).
	KVStored KVEventKind = iota + 1
	// KVRemoved: a cached block was evicted (BlockRemoved).
	KVRemoved
	// KVCleared: the engine's record of its cache was lost; a subscriber must forget every block
	// of this engine (AllBlocksCleared).
	KVCleared
)

// KVEvent is one change of the engine's prefix cache. Only requests submitted with BlockHashes
// produce events, so the hashes they carry are the ones a subscriber can compute (vLLM's chain
// over token ids).
type KVEvent struct {
	Kind KVEventKind
	// Hash is the block's hash (KVStored, KVRemoved).
	Hash uint64
	// Parent is the previous block's hash in the prompt's chain; HasParent is false for a first
	// block (KVStored).
	Parent    uint64
	HasParent bool
	// Tokens are the block's token ids (KVStored); they alias the request's TokenIDs.
	Tokens []int64
	// Adapter is the LoRA adapter of the request that stored the block, "" for the base model.
	Adapter string
}

// MaxKVEvents bounds the events the engine keeps until TakeKVEvents collects them. Past it the
// backlog is dropped and replaced by one KVCleared, so a stalled publisher costs its subscriber
// hits, never wrong answers: the subscriber forgets the engine's blocks instead of keeping blocks
// whose eviction it did not hear of.
const MaxKVEvents = 1 << 16

// kvLog is the engine's backlog of prefix-cache events (nil when Config.KVEvents is off).
type kvLog struct {
	events  []KVEvent
	dropped uint64 // backlogs dropped because they reached MaxKVEvents
}

func (l *kvLog) add(ev KVEvent) {
	if len(l.events) >= MaxKVEvents {
		clear(l.events)
		l.events = append(l.events[:0], KVEvent{Kind: KVCleared})
		l.dropped++
	}
	l.events = append(l.events, ev)
}

// TakeKVEvents appends the events recorded since the last call to dst, in order, and returns
// it; with Config.KVEvents off it returns dst unchanged.
func (e *Engine) TakeKVEvents(dst []KVEvent) []KVEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pool.kv == nil {
		return dst
	}
	dst = append(dst, e.pool.kv.events...)
	clear(e.pool.kv.events)
	e.pool.kv.events = e.pool.kv.events[:0]
	return dst
}

// KVEventsDropped counts the backlogs dropped (each replaced by a KVCleared) because nobody
// collected them before they reached MaxKVEvents.
func (e *Engine) KVEventsDropped() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pool.kv == nil {
		return 0
	}
	return e.pool.kv.dropped
}

// storedEvent records that prompt block k of s entered the cache.
func (e *Engine) storedEvent(s *seq, k int) {
	ev := KVEvent{Kind: KVStored, Hash: s.hashes[k], Adapter: s.req.Adapter}
	if k > 0 {
		ev.Parent, ev.HasParent = s.hashes[k-1], true
	}
	if hi := (k + 1) * profile.BlockSize; hi <= len(s.req.TokenIDs) {
		ev.Tokens = s.req.TokenIDs[k*profile.BlockSize : hi]
	}
	e.pool.kv.add(ev)
}
