package engine

import (
	"sort"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// Stats are the engine's cumulative counters and histograms (simulated seconds).
type Stats struct {
	// PrefixQueries and PrefixHits count prompt tokens looked up in and found in the prefix cache.
	PrefixQueries, PrefixHits uint64
	// Preemptions counts sequences preempted for lack of KV blocks.
	Preemptions uint64
	// PromptTokens and GenerationTokens count prompt tokens admitted and tokens generated.
	PromptTokens, GenerationTokens uint64
	// Finished counts finished requests by finish reason.
	Finished map[string]uint64
	// Cancelled counts requests withdrawn before they finished.
	Cancelled uint64
	// AdapterLoads counts LoRA adapter loads.
	AdapterLoads uint64
	// Steps counts engine steps; StepTime is their total simulated duration.
	Steps    uint64
	StepTime time.Duration
	// TTFT and ITL are the time-to-first-token and inter-token-latency histograms.
	TTFT, ITL Histogram
	// E2E, Queue, Prefill, Decode and Inference are vLLM's per-request phase histograms of
	// finished requests: arrival to last token; reaching the engine (after the API overhead) to
	// first being scheduled; first scheduled to first token; first to last token; first scheduled
	// to last token.
	E2E, Queue, Prefill, Decode, Inference Histogram
	// IterationTokens is the histogram of tokens computed per engine step (prefill and decode).
	IterationTokens Histogram
	// Lag is the histogram of how far (simulated time, early or late) each step ended from its
	// schedule, and LastLag the most recent signed value (negative: early). Only Run observes them.
	Lag     Histogram
	LastLag time.Duration
	// Dropped is the simulated time given up when the loop fell more than a second behind and
	// restarted its schedule from the current time: how far the simulated clock has drifted behind
	// real time for good. Late steps that are caught up do not count.
	Dropped time.Duration
}

func newStats() Stats {
	return Stats{
		Finished: map[string]uint64{},
		TTFT:     newHistogram(ttftBounds),
		ITL:      newHistogram(itlBounds),
		Lag:      newHistogram(lagBounds),

		E2E:             newHistogram(requestBounds),
		Queue:           newHistogram(requestBounds),
		Prefill:         newHistogram(requestBounds),
		Decode:          newHistogram(requestBounds),
		Inference:       newHistogram(requestBounds),
		IterationTokens: newHistogram(iterationTokenBounds),
	}
}

// Snapshot is a consistent view of the engine's state, taken under one lock.
type Snapshot struct {
	// Waiting and Running count queued and scheduled sequences.
	Waiting, Running int
	// TotalBlocks and UsedBlocks describe the KV cache (BlockSize tokens per block); CachedBlocks
	// are free blocks that still hold a reusable prefix.
	TotalBlocks, UsedBlocks, CachedBlocks int
	// BlockSize is the number of tokens per block.
	BlockSize int
	// MaxLoras is the number of adapter slots; RunningAdapters and WaitingAdapters name the
	// adapters of running and waiting sequences (sorted); ResidentAdapters the loaded ones.
	MaxLoras                                           int
	RunningAdapters, WaitingAdapters, ResidentAdapters []string
	// Stats are the cumulative counters.
	Stats Stats
}

// KVUsage is the fraction of KV blocks in use (0..1), as vLLM's kv_cache_usage_perc.
func (s Snapshot) KVUsage() float64 {
	if s.TotalBlocks == 0 {
		return 0
	}
	return float64(s.UsedBlocks) / float64(s.TotalBlocks)
}

// Snapshot returns the engine's current state.
func (e *Engine) Snapshot() Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stats.clone()
	st.AdapterLoads = e.lora.loads
	return Snapshot{
		Waiting: len(e.waiting), Running: len(e.running),
		TotalBlocks: e.pool.total(), UsedBlocks: e.pool.used, CachedBlocks: e.pool.nLRU,
		BlockSize: profile.BlockSize, MaxLoras: e.cfg.MaxLoras,
		RunningAdapters:  sortedKeys(e.lora.running),
		WaitingAdapters:  sortedKeys(e.lora.waiting),
		ResidentAdapters: append([]string(nil), e.lora.resident...),
		Stats:            st,
	}
}

func sortedKeys(m map[string]int) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
