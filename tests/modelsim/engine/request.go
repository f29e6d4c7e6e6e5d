package engine

import (
	"sync"
	"time"
)

// Request is one generation request handed to the engine.
type Request struct {
	// Model is the name the request addressed (base model or adapter); it seeds the prefix hashes.
	Model string
	// Adapter is the LoRA adapter to run, or "" for the base model.
	Adapter string
	// Prompt is the prompt text; its 64-byte blocks are hashed for the prefix cache.
	Prompt []byte
	// PromptTokens is the prompt length in tokens (> 0).
	PromptTokens int
	// MaxTokens is the number of tokens to generate (> 0).
	MaxTokens int
	// FinishReason is reported when MaxTokens have been generated ("length" or "stop").
	FinishReason string
	// TokenIDs are the prompt's token ids, when the server tokenized it (KV cache events carry
	// each stored block's ids); BlockHashes their chained block hashes, one per full block of
	// profile.BlockSize tokens, as vLLM computes them. With BlockHashes set the prefix cache is
	// keyed by them instead of the prompt text's 64-byte blocks, and the request's blocks are
	// reported as KV cache events (Config.KVEvents).
	TokenIDs    []int64
	BlockHashes []uint64
	// RecordTimes keeps every token's simulated time in Progress.TokenTimes (tests, simulations).
	RecordTimes bool
	// RemoteKV marks a prompt whose KV cache another server computed and this one pulled
	// (prefill/decode disaggregation): at its first admission every prompt token but the last
	// counts as computed, so it costs blocks but no prefill. Recomputed locally after a
	// preemption.
	RemoteKV bool
}

// Progress is a snapshot of a request's generation.
type Progress struct {
	// Generated is the number of tokens produced so far.
	Generated int
	// CachedTokens is the prompt tokens served from the prefix cache at first admission.
	CachedTokens int
	// Arrival, FirstToken and LastToken are simulated times (FirstToken/LastToken zero until set).
	Arrival, FirstToken, LastToken time.Duration
	// Done is set once generation finished; FinishReason tells why.
	Done         bool
	FinishReason string
	// Preemptions counts how often the request was preempted and recomputed.
	Preemptions int
	// TokenTimes holds each token's simulated time when the request asked for it.
	TokenTimes []time.Duration
}

// Handle follows one submitted request. It is safe for concurrent use.
type Handle struct {
	notify chan struct{}
	mu     sync.Mutex
	p      Progress
	seq    *seq
}

func newHandle() *Handle {
	return &Handle{notify: make(chan struct{}, 1)}
}

// Notify returns a channel that receives a value after the request made progress. Notifications
// coalesce: after a receive, read Progress to see everything that happened.
func (h *Handle) Notify() <-chan struct{} { return h.notify }

// Progress returns a copy of the request's progress (TokenTimes shares its backing array).
func (h *Handle) Progress() Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.p
}

func (h *Handle) setPreemptions(n int) {
	h.mu.Lock()
	h.p.Preemptions = n
	h.mu.Unlock()
}

func (h *Handle) setCached(n int) {
	h.mu.Lock()
	h.p.CachedTokens = n
	h.mu.Unlock()
}

func (h *Handle) setToken(generated int, at time.Duration, record, done bool, reason string) {
	h.mu.Lock()
	h.p.Generated = generated
	if generated == 1 {
		h.p.FirstToken = at
	}
	h.p.LastToken = at
	if record {
		h.p.TokenTimes = append(h.p.TokenTimes, at)
	}
	if done {
		h.p.Done, h.p.FinishReason = true, reason
	}
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
}
