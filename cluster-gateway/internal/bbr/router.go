// Package bbr is body-based routing: it reads the model, streaming flags and prompt from an
// OpenAI request body in one pass without copying the body, resolves a LoRA adapter to its base
// model from what the endpoints serve (plus an optional adapter map), and computes the prompt's
// prefix-block hashes into a pooled slice. The request pipeline runs it first for both front
// doors.
package bbr

import (
	"fmt"
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/hashpool"
	"github.com/switchyard-dev/switchyard/contract/openai"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// Config configures body-based routing.
type Config struct {
	// MaxBodyBytes is the largest accepted request body; larger bodies get 413. Default 32 MiB.
	MaxBodyBytes int64
	// MaxPrefixBlocks bounds the prefix hashes computed per prompt (64 bytes each). Default 4096.
	MaxPrefixBlocks int
	// Adapters maps adapter names to base models for adapters pods load on demand. Default empty.
	Adapters map[string]string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 32 << 20, MaxPrefixBlocks: 4096, Adapters: map[string]string{}}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.MaxBodyBytes <= 0 {
		return fmt.Errorf("bbr: MaxBodyBytes must be positive, got %d", c.MaxBodyBytes)
	}
	if c.MaxPrefixBlocks < 0 {
		return fmt.Errorf("bbr: MaxPrefixBlocks must not be negative, got %d", c.MaxPrefixBlocks)
	}
	return nil
}

// Router turns request bodies into scheduling requests. It is safe for concurrent use.
type Router struct {
	cfg    Config
	src    EndpointSource
	bodies sync.Pool
	hashes hashpool.Pool
}

// NewRouter returns a Router resolving models against src.
func NewRouter(cfg Config, src EndpointSource) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Router{cfg: cfg, src: src}
	r.bodies.New = func() any { return new(openai.Body) }
	return r, nil
}

// MaxBodyBytes is the configured body limit.
func (r *Router) MaxBodyBytes() int64 { return r.cfg.MaxBodyBytes }

// Routed is the outcome of routing one body.
type Routed struct {
	// Stream and IncludeUsage echo the body's streaming settings.
	Stream, IncludeUsage bool
}

// Route parses body and fills req's Model, BaseModel, Adapter, PromptTokens, MaxTokens and
// PrefixHashes. Errors are *apierror.Error values ready for the client (400, 404 or 413).
//
// PrefixHashes is set to a slice from the router's pool (whatever it held before is dropped):
// once nothing reads the request's hashes any more (the scheduler, its hooks, retries), hand it
// back with Release. A request that is never released only costs an allocation.
func (r *Router) Route(body []byte, req *framework.Request) (Routed, error) {
	if int64(len(body)) > r.cfg.MaxBodyBytes {
		return Routed{}, apierror.TooLarge(r.cfg.MaxBodyBytes)
	}
	b := r.body()
	defer r.release(b)
	b.MaxPrompt = r.cfg.MaxPrefixBlocks * prefix.BlockSize // the text past it is not hashed
	if err := openai.Parse(body, b); err != nil {
		return Routed{}, apierror.ParseError(err)
	}
	eps := r.src.Endpoints()
	res, ok := resolve(eps, r.cfg.Adapters, b.Model)
	if !ok {
		return Routed{}, notServed(eps, b.Model)
	}
	req.Model, req.BaseModel, req.Adapter = b.Model, res.BaseModel, res.Adapter
	req.PromptTokens = b.EstimatedPromptTokens()
	req.MaxTokens = b.MaxTokens
	if len(b.SessionID) > 0 {
		req.SessionID = string(b.SessionID)
	}
	blocks := len(b.Prompt) / prefix.BlockSize
	if r.cfg.MaxPrefixBlocks > 0 {
		blocks = min(blocks, r.cfg.MaxPrefixBlocks)
	}
	req.PrefixHashes = prefix.Hashes(r.hashes.Get(blocks), b.Model, b.Prompt, r.cfg.MaxPrefixBlocks)
	return Routed{Stream: b.Stream, IncludeUsage: b.IncludeUsage}, nil
}

// RouteModel fills req's Model, BaseModel and Adapter for a request whose model the front door
// read itself (a pass-through path's JSON or multipart body): no prompt, so no prefix hashes and
// no token estimate. A model nothing serves is a 404 *apierror.Error.
func (r *Router) RouteModel(model string, req *framework.Request) error {
	eps := r.src.Endpoints()
	res, ok := resolve(eps, r.cfg.Adapters, model)
	if !ok {
		return notServed(eps, model)
	}
	req.Model, req.BaseModel, req.Adapter = model, res.BaseModel, res.Adapter
	return nil
}

// ParseModel reads the model of a pass-through path's JSON body with the inference paths'
// reader (openai.Parse: the same model both tiers see, ambiguous keys refused), without keeping
// its prompt. Errors are *apierror.Error values ready for the client (400 or 413).
func (r *Router) ParseModel(body []byte) (string, error) {
	if int64(len(body)) > r.cfg.MaxBodyBytes {
		return "", apierror.TooLarge(r.cfg.MaxBodyBytes)
	}
	b := r.body()
	defer r.release(b)
	b.MaxPrompt = 1 // the prompt is not used: pass-through requests are not prefix-scored
	if err := openai.Parse(body, b); err != nil {
		return "", apierror.ParseError(err)
	}
	return b.Model, nil
}

// Release gives req's prefix hashes back to the router's pool and clears req.PrefixHashes.
// Call it once per routed request, when nothing reads the hashes any more: the slice is
// reused by the next request at once (and overwritten first in tests, see
// PoisonReleasedHashes).
func (r *Router) Release(req *framework.Request) {
	r.hashes.Put(req.PrefixHashes)
	req.PrefixHashes = nil
}

// PoisonReleasedHashes makes Release overwrite every slice it gets back with hashpool.Poison,
// so a request whose hashes are still read after their release sees them change. For tests;
// call it before the router is used.
func (r *Router) PoisonReleasedHashes() { r.hashes.SetPoison() }

// pooling is false in builds with the nopool tag (nopool.go), which bypass the router's pool of
// parsed bodies so that benchmarks can measure what it saves.
var pooling = true

// body returns a parsed body from the pool.
func (r *Router) body() *openai.Body {
	if !pooling {
		return new(openai.Body)
	}
	return r.bodies.Get().(*openai.Body)
}

// release returns b to the pool, dropping its reference to the request body and its prompt
// buffer when that grew very large.
func (r *Router) release(b *openai.Body) {
	b.Release(4 << 20)
	if pooling {
		r.bodies.Put(b)
	}
}
