// Package profile holds the GPU performance profiles of the simulated model server: how fast a
// Llama-3.1-8B-class model prefills and decodes on a given GPU, how many KV-cache tokens fit, and how
// long a LoRA adapter takes to load. The figures come from the public sources listed in the project's
// workload notes and in the modelsim documentation.
package profile

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// BlockSize is the number of tokens held by one KV-cache block, as in vLLM.
const BlockSize = 16

// Profile describes the speed and capacity of one simulated GPU running one model replica.
type Profile struct {
	// Name is the profile's name (h100, a100, l40s, a10g).
	Name string
	// PrefillTokensPerSec is the prompt processing rate of an uncached prompt token.
	PrefillTokensPerSec float64
	// ITLBatch1 is the inter-token latency (one decode step) with one running sequence.
	ITLBatch1 time.Duration
	// ITLBatch64 is the inter-token latency with 64 running sequences; other batch sizes are
	// interpolated linearly and extrapolated beyond 64.
	ITLBatch64 time.Duration
	// KVTokens is the KV-cache capacity in tokens (BlockSize tokens per block).
	KVTokens int
	// MaxNumSeqs bounds the number of running sequences (vLLM's max_num_seqs).
	MaxNumSeqs int
	// MaxBatchedTokens is the per-step token budget that chunks prefill (vLLM's
	// max_num_batched_tokens).
	MaxBatchedTokens int
	// LoRALoad is the time to load an adapter into a free slot; it stalls the step that loads it.
	LoRALoad time.Duration
	// StepOverhead is the fixed cost of one engine step (scheduling, kernel launches, sampling).
	StepOverhead time.Duration
	// APIOverhead is the per-request cost of the HTTP front end (parsing, tokenising) before the
	// request reaches the engine.
	APIOverhead time.Duration
	// Jitter is the relative spread of step times (0.02 = ±2%), drawn from the seeded generator.
	Jitter float64
}

// builtin holds the profiles from WORKLOADS.md (Llama-3.1-8B class, BF16, TP=1).
var builtin = map[string]Profile{
	"h100": {
		Name: "h100", PrefillTokensPerSec: 30000, ITLBatch1: 8 * time.Millisecond,
		ITLBatch64: 15 * time.Millisecond, KVTokens: 400000, MaxNumSeqs: 256,
		MaxBatchedTokens: 8192, LoRALoad: 50 * time.Millisecond,
	},
	"a100": {
		Name: "a100", PrefillTokensPerSec: 15000, ITLBatch1: 14 * time.Millisecond,
		ITLBatch64: 25 * time.Millisecond, KVTokens: 250000, MaxNumSeqs: 256,
		MaxBatchedTokens: 8192, LoRALoad: 80 * time.Millisecond,
	},
	"l40s": {
		Name: "l40s", PrefillTokensPerSec: 8000, ITLBatch1: 25 * time.Millisecond,
		ITLBatch64: 40 * time.Millisecond, KVTokens: 120000, MaxNumSeqs: 128,
		MaxBatchedTokens: 4096, LoRALoad: 100 * time.Millisecond,
	},
	"a10g": {
		Name: "a10g", PrefillTokensPerSec: 3000, ITLBatch1: 30 * time.Millisecond,
		ITLBatch64: 60 * time.Millisecond, KVTokens: 30000, MaxNumSeqs: 64,
		MaxBatchedTokens: 2048, LoRALoad: 150 * time.Millisecond,
	},
}

// Common defaults shared by every built-in profile.
const (
	defaultStepOverhead = 1500 * time.Microsecond
	defaultAPIOverhead  = 3 * time.Millisecond
	defaultJitter       = 0.02
)

// ErrUnknown is returned by Lookup for a profile name that does not exist.
var ErrUnknown = errors.New("profile: unknown profile")

// Lookup returns the built-in profile with the given name (case-insensitive).
func Lookup(name string) (Profile, error) {
	p, ok := builtin[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Profile{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	p.StepOverhead = defaultStepOverhead
	p.APIOverhead = defaultAPIOverhead
	p.Jitter = defaultJitter
	return p, nil
}

// Names lists the built-in profile names in sorted order.
func Names() []string {
	names := make([]string, 0, len(builtin))
	for n := range builtin {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NumBlocks is the number of KV-cache blocks of the profile.
func (p Profile) NumBlocks() int { return p.KVTokens / BlockSize }

// ITL returns the decode step time for a batch of n running sequences: the linear interpolation
// between ITLBatch1 and ITLBatch64, extrapolated beyond 64. It is zero for n <= 0.
func (p Profile) ITL(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	slope := float64(p.ITLBatch64-p.ITLBatch1) / 63
	return p.ITLBatch1 + time.Duration(slope*float64(n-1))
}

// PrefillTime is the time to process n uncached prompt tokens.
func (p Profile) PrefillTime(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(n) / p.PrefillTokensPerSec * float64(time.Second))
}

// Validate reports whether every field of the profile is usable.
func (p Profile) Validate() error {
	switch {
	case p.PrefillTokensPerSec <= 0:
		return fmt.Errorf("profile %s: PrefillTokensPerSec must be > 0", p.Name)
	case p.ITLBatch1 <= 0 || p.ITLBatch64 < p.ITLBatch1:
		return fmt.Errorf("profile %s: need 0 < ITLBatch1 <= ITLBatch64", p.Name)
	case p.KVTokens < BlockSize:
		return fmt.Errorf("profile %s: KVTokens must be >= %d", p.Name, BlockSize)
	case p.MaxNumSeqs <= 0:
		return fmt.Errorf("profile %s: MaxNumSeqs must be > 0", p.Name)
	case p.MaxBatchedTokens <= 0:
		return fmt.Errorf("profile %s: MaxBatchedTokens must be > 0", p.Name)
	case p.LoRALoad < 0 || p.StepOverhead < 0 || p.APIOverhead < 0:
		return fmt.Errorf("profile %s: durations must be >= 0", p.Name)
	case p.Jitter < 0 || p.Jitter >= 0.5:
		return fmt.Errorf("profile %s: Jitter must be in [0, 0.5)", p.Name)
	}
	return nil
}
