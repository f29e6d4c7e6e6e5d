// Package preciseprefix provides the precise-prefix-cache-scorer plugin (llm-d's name): it
// scores each endpoint by the fraction of the prompt's leading KV blocks the endpoint reports
// holding, from the KV cache events the pods publish (package kvevents). The index matches
// pods by the block hashes the pods report, so the scorer must hash the request's prompt the
// way the engine does: it needs the prompt's token ids, which the gateway gets from the
// engine's own /tokenize endpoint (on a candidate pod, or at a configured URL; bounded, cached,
// with a timeout), then chains the blocks' hashes exactly as vLLM does with
// --prefix-caching-hash-algo=sha256_cbor and PYTHONHASHSEED equal to hashSeed. When it cannot
// (no tokenizer, a prompt it cannot send, a tokenizer error or timeout), it scores that request
// with the approximate prefix-cache-scorer it embeds and says so in the metric
// switchyard_gateway_precise_prefix_decisions_total{mode="approximate",reason=...}.
package preciseprefix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/kvevents"
)

// Type is the registered plugin type.
const Type = "precise-prefix-cache-scorer"

func init() { framework.Register(Type, Factory) }

// Tokenizer modes of Params.Tokenizer.
const (
	TokenizerPod  = "pod"  // POST /tokenize on a candidate pod
	TokenizerNone = "none" // never tokenize: always the approximate scorer
)

// Params configure the scorer.
type Params struct {
	// Tokenizer is "pod" (the default: the candidate pods' own /tokenize, which every vLLM
	// server has), "none", or the base URL of a vLLM-compatible server of the same model
	// (http://host:port), whose /tokenize is used.
	Tokenizer string `json:"tokenizer,omitempty"`
	// TokenizeTimeout bounds one /tokenize call. Default 100ms.
	TokenizeTimeout framework.Duration `json:"tokenizeTimeout,omitzero"`
	// MaxTokenizeBytes bounds the request bodies sent to /tokenize; larger ones are scored
	// approximately. Default 1 MiB.
	MaxTokenizeBytes int `json:"maxTokenizeBytes,omitempty"`
	// CacheEntries bounds the cache of prompts already hashed. Default 4096.
	CacheEntries int `json:"cacheEntries,omitempty"`
	// BlockSize is the engine's KV block size in tokens (vLLM's --block-size). Default 16.
	BlockSize int `json:"blockSize,omitempty"`
	// HashSeed is the engine's PYTHONHASHSEED (the root of the chain). Default "".
	HashSeed string `json:"hashSeed,omitempty"`
	// HashAlgo is the engine's --prefix-caching-hash-algo; only sha256_cbor can be reproduced.
	HashAlgo string `json:"hashAlgo,omitempty"`
	// MaxPrefixBlocksToMatch bounds the blocks hashed and compared per request. Default 1024.
	MaxPrefixBlocksToMatch int `json:"maxPrefixBlocksToMatch,omitempty"`
	// PendingTTL is how long the blocks of a request just routed to a pod count as held by that
	// pod before its BlockStored events arrive (kvevents.Index.AddPending). Default 2s.
	PendingTTL framework.Duration `json:"pendingTTL,omitzero"`
	// IndexerConfig and KVEventsConfig are llm-d's parameter blocks, accepted so an llm-d
	// configuration loads: tokenProcessorConfig.blockSize and .hashSeed are read from the
	// first; the events endpoint is the gateway's --kv-events-endpoint.
	IndexerConfig  *llmdIndexerConfig `json:"indexerConfig,omitempty"`
	KVEventsConfig json.RawMessage    `json:"kvEventsConfig,omitempty"`
}

type llmdIndexerConfig struct {
	TokenProcessorConfig *struct {
		BlockSize int    `json:"blockSize,omitempty"`
		HashSeed  string `json:"hashSeed,omitempty"`
	} `json:"tokenProcessorConfig,omitempty"`
	Rest map[string]json.RawMessage `json:"-"`
}

// UnmarshalJSON reads tokenProcessorConfig and ignores llm-d's other indexer settings.
func (c *llmdIndexerConfig) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if tp, ok := raw["tokenProcessorConfig"]; ok {
		c.TokenProcessorConfig = &struct {
			BlockSize int    `json:"blockSize,omitempty"`
			HashSeed  string `json:"hashSeed,omitempty"`
		}{}
		if err := json.Unmarshal(tp, c.TokenProcessorConfig); err != nil {
			return fmt.Errorf("tokenProcessorConfig: %w", err)
		}
		delete(raw, "tokenProcessorConfig")
	}
	c.Rest = raw
	return nil
}

// Defaults.
const (
	DefaultTokenizeTimeout  = 100 * time.Millisecond
	DefaultMaxTokenizeBytes = 1 << 20
	DefaultCacheEntries     = 4096
	DefaultBlockSize        = 16
	DefaultMaxBlocks        = 1024
	DefaultPendingTTL       = 2 * time.Second
	// failuresToBackoff consecutive tokenizer failures pause tokenizing for backoff.
	failuresToBackoff = 3
	backoff           = 2 * time.Second
)

// Scorer is the precise-prefix-cache-scorer. It is safe for concurrent use.
type Scorer struct {
	name      string
	idx       *kvevents.Index
	resident  *kvevents.ResidentPrefixes // nil: the gossiped sketch is not built from the index
	approx    approximate
	client    *http.Client
	mode      string // TokenizerPod, TokenizerNone or a base URL
	timeout   time.Duration
	maxBody   int
	blockSize int
	maxBlocks int
	pendTTL   time.Duration
	seed      string
	cache     *hashCache
	metrics   *decisionMetrics
	log       *slog.Logger
	now       func() time.Time

	rr        atomic.Uint64
	fails     atomic.Int32
	pausedTil atomic.Int64 // unix nanoseconds
}

var (
	_ framework.Scorer             = (*Scorer)(nil)
	_ framework.CycleStateProducer = (*Scorer)(nil)
	_ framework.PreRequest         = (*Scorer)(nil)
	_ framework.PostResponse       = (*Scorer)(nil)
)

// approximate is the prefix-cache-scorer the scorer falls back to, built through the plugin
// registry (plugins do not import each other).
type approximate interface {
	framework.Scorer
	framework.PreRequest
	framework.PostResponse
}

// ApproximateType is the plugin type of the fallback.
const ApproximateType = "prefix-cache-scorer"

func buildApproximate(name string, h framework.Handle) (approximate, error) {
	f, ok := framework.DefaultRegistry.Lookup(ApproximateType)
	if !ok {
		return nil, fmt.Errorf("fallback %s is not registered", ApproximateType)
	}
	p, err := f(name+"/approximate", nil, h)
	if err != nil {
		return nil, err
	}
	a, ok := p.(approximate)
	if !ok {
		return nil, fmt.Errorf("fallback %s is not a scorer with PreRequest and PostResponse", ApproximateType)
	}
	return a, nil
}

var errNoIndex = errors.New(
	"precise-prefix-cache-scorer needs the pods' KV cache events: start the gateway with --kv-events-endpoint",
)

// Factory builds a Scorer over the gateway's KV event index.
func Factory(name string, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	idx, _ := framework.LookupService(h, framework.ServiceKVEventsIndex).(*kvevents.Index)
	if idx == nil {
		return nil, errNoIndex
	}
	s, err := New(name, p, idx)
	if err != nil {
		return nil, err
	}
	if s.approx, err = buildApproximate(name, h); err != nil {
		return nil, err
	}
	s.log, s.now = h.Logger(), h.Now
	s.resident, _ = framework.LookupService(h, framework.ServiceKVResidentPrefixes).(*kvevents.ResidentPrefixes)
	if s.resident != nil {
		s.resident.Attach()
	}
	s.metrics = registerMetrics(framework.LookupService(h, framework.ServiceRegisterer))
	if len(p.KVEventsConfig) > 0 || (p.IndexerConfig != nil && len(p.IndexerConfig.Rest) > 0) {
		s.log.Warn(
			"llm-d indexer and kvEventsConfig settings ignored: the events endpoint is --kv-events-endpoint",
			"plugin",
			name,
		)
	}
	return s, nil
}

// New returns a Scorer reading idx; it validates p. Use Factory in a gateway: it also embeds
// the approximate scorer the fallback needs.
func New(name string, p Params, idx *kvevents.Index) (*Scorer, error) {
	if tp := p.IndexerConfig; tp != nil && tp.TokenProcessorConfig != nil {
		p.BlockSize = cmpOr(p.BlockSize, tp.TokenProcessorConfig.BlockSize)
		if p.HashSeed == "" {
			p.HashSeed = tp.TokenProcessorConfig.HashSeed
		}
	}
	if p.HashAlgo != "" && p.HashAlgo != HashAlgo {
		return nil, fmt.Errorf(
			"hashAlgo %q cannot be reproduced by the gateway; run the engine with --prefix-caching-hash-algo=%s",
			p.HashAlgo,
			HashAlgo,
		)
	}
	if p.BlockSize < 0 || p.MaxTokenizeBytes < 0 || p.CacheEntries < 0 || p.MaxPrefixBlocksToMatch < 0 ||
		p.TokenizeTimeout.Duration < 0 || p.PendingTTL.Duration < 0 {
		return nil, errors.New("parameters must not be negative")
	}
	mode := cmpOrString(p.Tokenizer, TokenizerPod)
	if mode != TokenizerPod && mode != TokenizerNone && !strings.HasPrefix(mode, "http://") &&
		!strings.HasPrefix(mode, "https://") {
		return nil, fmt.Errorf("tokenizer must be %q, %q or an http(s) URL, got %q", TokenizerPod, TokenizerNone, mode)
	}
	s := &Scorer{
		name: name, idx: idx, mode: strings.TrimSuffix(mode, "/"),
		timeout:   cmpOr(p.TokenizeTimeout.Duration, DefaultTokenizeTimeout),
		maxBody:   cmpOr(p.MaxTokenizeBytes, DefaultMaxTokenizeBytes),
		blockSize: cmpOr(p.BlockSize, DefaultBlockSize),
		maxBlocks: cmpOr(p.MaxPrefixBlocksToMatch, DefaultMaxBlocks),
		pendTTL:   cmpOr(p.PendingTTL.Duration, DefaultPendingTTL),
		seed:      p.HashSeed,
		cache:     newHashCache(cmpOr(p.CacheEntries, DefaultCacheEntries)),
		metrics:   registerMetrics(nil),
		log:       slog.New(slog.DiscardHandler),
		now:       time.Now,
	}
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}}
	return s, nil
}

// TypedName returns the plugin's type and name.
func (s *Scorer) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: s.name}
}

// ProducesCycleState marks the scorer as writing the prefix match later scorers read.
func (s *Scorer) ProducesCycleState() {}

// Score writes, per endpoint, the fraction of the prompt's blocks it reports holding, or the
// approximate scorer's scores when the prompt cannot be hashed as the engine does.
func (s *Scorer) Score(
	ctx context.Context,
	cs *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
	scores []float64,
) {
	hashes, reason := s.requestHashes(ctx, req, eps)
	cs.Write(schemeKey, schemes[reason])
	if reason != reasonPrecise {
		s.metrics.decisions.WithLabelValues("approximate", reason).Inc()
		s.log.Debug("precise prefix scoring fell back to the approximate scorer", "request", req.ID, "reason", reason)
		if s.approx != nil {
			s.approx.Score(ctx, cs, req, eps, scores)
		} else {
			clear(scores)
		}
		return
	}
	s.metrics.decisions.WithLabelValues("precise", reason).Inc()
	cs.Write(hashesKey, &routedHashes{hashes: hashes})
	m := framework.NewPrefixMatch()
	m.Blocks = resize(m.Blocks, len(eps))
	m.Endpoints = eps
	s.idx.MatchAt(hashes, eps, m.Blocks, s.now())
	// PrefixMatch counts blocks of framework.PrefixTokensPerBlock tokens.
	m.Total = len(hashes) * s.blockSize / framework.PrefixTokensPerBlock
	for i := range eps {
		scores[i] = 0
		if len(hashes) > 0 {
			scores[i] = float64(m.Blocks[i]) / float64(len(hashes))
		}
		m.Blocks[i] = m.Blocks[i] * int32(s.blockSize) / framework.PrefixTokensPerBlock
	}
	cs.Write(framework.PrefixMatchKey, m)
}

// PreRequest says in res how the request was scored (Result.PrefixScoring, the
// x-switchyard-prefix-scoring header) and feeds the embedded approximate scorer, so its fallback
// stays informed. A request scored precisely has its blocks added as pending on the chosen pod,
// and its two hash chains recorded for the gossiped prefix sketch.
func (s *Scorer) PreRequest(ctx context.Context, req *framework.Request, res *framework.Result) {
	if res.State != nil {
		if v, ok := res.State.Read(schemeKey); ok {
			if sc, ok := v.(*scheme); ok && sc != nil {
				res.PrefixScoring = sc.header
			}
		}
		if v, ok := res.State.Read(hashesKey); ok {
			if rh, ok := v.(*routedHashes); ok && rh != nil {
				s.routed(req, res, rh.hashes)
			}
		}
	}
	if s.approx != nil {
		s.approx.PreRequest(ctx, req, res)
	}
}

// PostResponse forwards to the approximate scorer.
func (s *Scorer) PostResponse(ctx context.Context, req *framework.Request, info *framework.ResponseInfo) {
	if s.approx != nil {
		s.approx.PostResponse(ctx, req, info)
	}
}

// hashesKey is the CycleState key under which Score leaves the block hashes it matched (a
// *routedHashes), for PreRequest.
const hashesKey = Type + "/hashes"

type routedHashes struct{ hashes []uint64 }

// routed adds the blocks of a request just routed as pending on its pod (and on the pod that
// prefills it, when prefill is disaggregated) and records its chains for the prefix sketch.
func (s *Scorer) routed(req *framework.Request, res *framework.Result, hashes []uint64) {
	now := s.now()
	for _, r := range []*framework.Result{res, res.Prefill} {
		if r != nil && len(r.Targets) > 0 {
			s.idx.AddPending(r.Targets[0].Meta().Address, hashes, now, s.pendTTL)
		}
	}
	if s.resident != nil {
		s.resident.Record(req.BaseModel, req.PrefixHashes, hashes, len(hashes) < s.maxBlocks)
	}
}

// requestHashes returns the prompt's block hashes as the engine computes them, or the reason
// it cannot.
func (s *Scorer) requestHashes(
	ctx context.Context,
	req *framework.Request,
	eps []framework.Endpoint,
) ([]uint64, string) {
	switch {
	case s.mode == TokenizerNone:
		return nil, reasonNoTokenizer
	case len(req.Body) == 0:
		return nil, reasonNoBody
	case len(req.Body) > s.maxBody:
		return nil, reasonTooLarge
	}
	key := xxhash.Sum64String(req.Model) ^ xxhash.Sum64(req.Body)*0x9e3779b97f4a7c15
	if h, ok := s.cache.get(key); ok {
		return h, reasonPrecise
	}
	body, ids, err := tokenizeBody(req.Model, req.Body)
	if err != nil {
		return nil, reasonUnsupported
	}
	if ids == nil {
		if ids, err = s.tokenize(ctx, req, eps, body); err != nil {
			if errors.Is(err, errPaused) {
				return nil, reasonBackoff
			}
			s.log.Debug("tokenize failed", "request", req.ID, "err", err)
			return nil, reasonTokenizeError
		}
	}
	adapter := req.Adapter
	hashes := newHasher(s.seed).chain(nil, ids, s.blockSize, s.maxBlocks, adapter)
	s.cache.put(key, hashes)
	return hashes, reasonPrecise
}

var errPaused = errors.New("tokenizer paused after failures")

// tokenize asks a candidate pod's (or the configured) /tokenize for the prompt's token ids.
func (s *Scorer) tokenize(
	ctx context.Context,
	req *framework.Request,
	eps []framework.Endpoint,
	body []byte,
) ([]int64, error) {
	if s.now().UnixNano() < s.pausedTil.Load() {
		return nil, errPaused
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ids, err := s.tokenizeOnce(ctx, eps, body)
	if err != nil {
		if s.fails.Add(1) >= failuresToBackoff {
			s.fails.Store(0)
			s.pausedTil.Store(s.now().Add(backoff).UnixNano())
			s.log.Warn("tokenizer failing: precise prefix scoring paused", "plugin", s.name, "for", backoff, "err", err)
		}
		return nil, err
	}
	s.fails.Store(0)
	return ids, nil
}

// tokenizeOnce asks the configured tokenizer, or up to two candidate pods in turn.
func (s *Scorer) tokenizeOnce(ctx context.Context, eps []framework.Endpoint, body []byte) ([]int64, error) {
	maxTokens := s.maxBlocks * s.blockSize
	if s.mode != TokenizerPod {
		return tokenize(ctx, s.client, s.mode+"/tokenize", body, maxTokens)
	}
	if len(eps) == 0 {
		return nil, errors.New("no candidate pod")
	}
	start := s.rr.Add(1)
	var err error
	for i := range min(2, len(eps)) {
		e := eps[(start+uint64(i))%uint64(len(eps))]
		var ids []int64
		if ids, err = tokenize(ctx, s.client, "http://"+e.Meta().Address+"/tokenize", body, maxTokens); err == nil {
			return ids, nil
		}
	}
	return nil, err
}

func resize(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func cmpOrString(v, def string) string { return cmpOr(v, def) }
