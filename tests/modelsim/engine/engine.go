// Package engine is the simulated inference engine of modelsim: a continuous-batching scheduler in
// the manner of vLLM, with a paged KV cache, automatic prefix caching over chained block hashes,
// chunked prefill, preemption by recomputation and LoRA adapter slots. It holds no HTTP: requests
// are submitted as Request values and followed through a Handle.
//
// Time is simulated. Each step's duration comes from the GPU profile through a physics model
// (package physics): by default the linear one,
//
//	step = overhead + uncached prefill tokens / prefill rate + decode(batch) + adapter loads
//
// where decode(b) = ITL(b) - overhead for b decoding sequences, ITL interpolated linearly between
// the profile's batch-1 and batch-64 figures; or a calibrated family fitted to measured vLLM runs,
// with attention terms in the batch's context. Run drives the engine against a Clock (wall time
// scaled by a factor in the server); Simulator drives it on a virtual clock, deterministically and
// without sleeping.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// Config configures an Engine.
type Config struct {
	// Profile gives the simulated GPU's speed and capacity.
	Profile profile.Profile
	// MaxLoras is the number of adapter slots (0 = adapters cannot run).
	MaxLoras int
	// Physics selects the step-time model and its jitter.
	Physics physics.Config
	// Seed seeds the step-time jitter; the same seed gives the same timings.
	Seed uint64
	// WatermarkBlocks is the number of free blocks admission keeps in reserve so that running
	// sequences can grow; negative means 1% of the cache (vLLM's default watermark).
	WatermarkBlocks int
	// LagWarn is the simulated lag behind schedule above which Run logs a warning.
	LagWarn time.Duration
	// KVEvents records prefix-cache events (blocks of requests with BlockHashes stored and
	// evicted) for TakeKVEvents.
	KVEvents bool
}

// DefaultConfig returns a configuration for the h100 profile with no adapter slots.
func DefaultConfig() Config {
	p, _ := profile.Lookup("h100")
	return Config{
		Profile:         p,
		MaxLoras:        0,                       // no adapters
		Physics:         physics.DefaultConfig(), // the linear model, uniform ±2% jitter
		Seed:            1,                       // fixed seed: reproducible timings
		WatermarkBlocks: -1,                      // 1% of the KV cache
		LagWarn:         250 * time.Millisecond,  // a quarter second behind is worth a warning
		KVEvents:        false,                   // no subscriber: record nothing
	}
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	if err := c.Profile.Validate(); err != nil {
		return fmt.Errorf("engine config: %w", err)
	}
	if err := c.Physics.Validate(); err != nil {
		return fmt.Errorf("engine config: %w", err)
	}
	if c.MaxLoras < 0 {
		return errors.New("engine config: MaxLoras must be >= 0")
	}
	if c.WatermarkBlocks >= c.Profile.NumBlocks() {
		return errors.New("engine config: WatermarkBlocks must be below the number of KV blocks")
	}
	return nil
}

// Errors returned by Submit.
var (
	ErrInvalidRequest = errors.New("engine: invalid request")
	ErrExceedsKV      = errors.New("engine: request does not fit in the KV cache")
	ErrNoAdapterSlots = errors.New("engine: adapter requested but max_loras is 0")
)

const (
	stateWaiting = iota
	stateRunning
	stateDone
	stateCancelled
)

// seq is the engine's view of one request.
type seq struct {
	h           *Handle
	req         Request
	arrival     time.Duration
	state       int
	hashes      []uint64
	blocks      []int32
	computed    int // tokens whose KV is computed
	target      int // tokens to prefill at the current admission (prompt + generated)
	generated   int
	registered  int // prompt blocks registered in the prefix cache
	lastToken   time.Duration
	firstToken  time.Duration
	scheduled   time.Duration // start of the first step that computed for it (-1 before)
	admitted    bool
	preemptions int
}

type stepEntry struct {
	s      *seq
	n      int
	decode bool
}

// Engine is the continuous-batching scheduler. Its methods are safe for concurrent use; one
// goroutine runs it (Run or a Simulator) while others submit and cancel requests.
type Engine struct {
	cfg       Config
	log       *slog.Logger
	watermark int
	wake      chan struct{}

	mu       sync.Mutex
	pool     *blockPool
	lora     *loraSlots
	waiting  []*seq
	running  []*seq
	model    *physics.Model // immutable; shared by clones
	step     []stepEntry
	batch    physics.Batch // the planned step's work
	pcg      *rand.PCG     // rng's source, kept so that Clone can copy its state
	rng      *rand.Rand
	stats    Stats
	lastWarn time.Time
}

// New returns an engine. A nil logger discards logs.
func New(cfg Config, logger *slog.Logger) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	model, err := physics.New(cfg.Physics, cfg.Profile)
	if err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	wm := cfg.WatermarkBlocks
	if wm < 0 {
		wm = cfg.Profile.NumBlocks() / 100
	}
	pcg := rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)
	pool := newBlockPool(cfg.Profile.NumBlocks())
	if cfg.KVEvents {
		pool.kv = &kvLog{}
	}
	return &Engine{
		cfg: cfg, log: logger, watermark: wm, wake: make(chan struct{}, 1),
		pool:  pool,
		lora:  newLoRASlots(cfg.MaxLoras),
		model: model,
		pcg:   pcg,
		rng:   rand.New(pcg),
		stats: newStats(),
	}, nil
}

// Profile returns the engine's GPU profile.
func (e *Engine) Profile() profile.Profile { return e.cfg.Profile }

// Physics returns the engine's step-time model.
func (e *Engine) Physics() *physics.Model { return e.model }

// APIOverhead is how long the front end holds a request of promptTokens before it reaches the
// engine (the physics model's figure).
func (e *Engine) APIOverhead(promptTokens int) time.Duration {
	return e.model.APIOverhead(promptTokens)
}

// MaxLoras returns the number of adapter slots.
func (e *Engine) MaxLoras() int { return e.cfg.MaxLoras }

// Check reports whether r could ever run on this engine: valid lengths, and prompt plus output
// fitting in the KV cache.
func (e *Engine) Check(r Request) error {
	if r.PromptTokens <= 0 || r.MaxTokens <= 0 {
		return fmt.Errorf("%w: prompt tokens %d and max tokens %d must be > 0",
			ErrInvalidRequest, r.PromptTokens, r.MaxTokens)
	}
	if r.Adapter != "" && e.cfg.MaxLoras == 0 {
		return ErrNoAdapterSlots
	}
	need := blocksFor(r.PromptTokens + r.MaxTokens)
	if limit := e.pool.total() - e.watermark; need > limit {
		return fmt.Errorf("%w: %d tokens need %d blocks, the cache admits at most %d",
			ErrExceedsKV, r.PromptTokens+r.MaxTokens, need, limit)
	}
	return nil
}

// Submit queues r, which arrived at simulated time arrival, and returns its handle.
func (e *Engine) Submit(r Request, arrival time.Duration) (*Handle, error) {
	if err := e.Check(r); err != nil {
		return nil, err
	}
	h := newHandle()
	e.submitHandle(r, arrival, h)
	return h, nil
}

// submitHandle queues a checked request under an existing handle.
func (e *Engine) submitHandle(r Request, arrival time.Duration, h *Handle) {
	if r.FinishReason == "" {
		r.FinishReason = "length"
	}
	s := &seq{
		h: h, req: r, arrival: arrival, state: stateWaiting, target: r.PromptTokens, scheduled: -1,
		hashes: r.BlockHashes,
	}
	if s.hashes == nil {
		s.hashes = prefix.Hashes(nil, r.Model, r.Prompt, 0)
	}
	h.mu.Lock()
	h.seq = s
	h.p.Arrival = arrival
	h.mu.Unlock()
	e.mu.Lock()
	e.waiting = append(e.waiting, s)
	e.lora.addWaiting(r.Adapter, 1)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Cancel withdraws a request (e.g. its client went away), freeing its KV blocks.
func (e *Engine) Cancel(h *Handle) {
	h.mu.Lock()
	s := h.seq
	h.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if s == nil {
		return
	}
	switch s.state {
	case stateWaiting:
		e.waiting = removeSeq(e.waiting, s)
		e.lora.addWaiting(s.req.Adapter, -1)
	case stateRunning:
		e.running = removeSeq(e.running, s)
		e.pool.release(s.blocks)
		s.blocks = nil
		e.lora.stop(s.req.Adapter)
	default:
		return
	}
	s.state = stateCancelled
	e.stats.Cancelled++
}

func removeSeq(list []*seq, s *seq) []*seq {
	for i, x := range list {
		if x == s {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	return list
}

func blocksFor(tokens int) int {
	return (tokens + profile.BlockSize - 1) / profile.BlockSize
}
