// Package framework defines the scheduler's plugin contracts, shaped like the Gateway API Inference
// Extension's endpoint picker so its users recognise them: a request runs through Filters, then
// weighted Scorers, then one Picker. Plugins are built by name from a GIE-style
// EndpointPickerConfig (see the registry and loader in this package).
package framework

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"
)

// Request is what the scheduler knows about one inference request. It is built once per request by
// the front door (HTTP proxy or ext_proc) after body-based routing and is read-only afterwards.
type Request struct {
	// ID identifies the request in logs.
	ID string
	// Model is the model named in the body: a base model or a LoRA adapter.
	Model string
	// BaseModel is the base model Model runs on (equal to Model when it is not an adapter).
	BaseModel string
	// Adapter is the LoRA adapter name, or "" when Model is a base model.
	Adapter string
	// PromptTokens is the estimated prompt length in tokens.
	PromptTokens int
	// MaxTokens is the requested output length, or 0 when not given.
	MaxTokens int
	// PrefixHashes are the prompt's chained block hashes (gossip/prefix), computed once.
	PrefixHashes []uint64
	// Body is the request body as received (read-only; valid while the request is being
	// scheduled), for plugins that need more of it than the fields above (the
	// precise-prefix-cache-scorer tokenizes its prompt). Nil when the front door has none.
	Body []byte
	// Priority is the request's priority band; < 0 is sheddable.
	Priority int
	// Tenant is the fairness key ("" for the default tenant).
	Tenant string
	// SessionID is the conversation the request belongs to, for session affinity: the session-id
	// header (x-session-id unless configured otherwise), else the body's metadata.session_id or
	// user; at most contract.MaxSessionID bytes; "" when the request names none.
	SessionID string
	// Headers are the request headers relevant to scheduling (lower-case names).
	Headers map[string]string
	// SubsetHint, when non-empty, restricts candidates to these addresses (Envoy's subset hint).
	SubsetHint []string
	// HandBackAfter, when above zero, is a router's offer to take the request elsewhere
	// (x-switchyard-hand-back-ms): flow control hands the request back (a refusal that the front
	// doors answer 429 with x-switchyard-overflow: 1) instead of queueing it, or when its
	// predicted time to first token on the chosen endpoint is above HandBackAfter.
	HandBackAfter time.Duration
	// SLO holds the request's latency objectives (x-slo-ttft-ms, x-slo-tpot-ms), zero when it
	// has none.
	SLO SLO
	// Arrived is when the request reached the gateway (the TTFT objective runs from then), zero
	// when unknown.
	Arrived time.Time
}

// Plugin is the common part of every scheduler plugin.
type Plugin interface {
	// TypedName returns the plugin's type (e.g. "queue-scorer") and instance name.
	TypedName() TypedName
}

// TypedName is a plugin's registered type and its instance name from the config.
type TypedName struct {
	Type string
	Name string
}

// Filter removes endpoints that cannot serve the request. It returns the kept endpoints, which may
// alias the input slice's backing array. Implementations must be safe for concurrent use.
type Filter interface {
	Plugin
	Filter(ctx context.Context, cs *CycleState, req *Request, eps []Endpoint) []Endpoint
}

// Scorer rates each endpoint in [0,1], higher is better. It writes scores[i] for eps[i]; scores has
// len(eps). Implementations must be safe for concurrent use.
type Scorer interface {
	Plugin
	Score(ctx context.Context, cs *CycleState, req *Request, eps []Endpoint, scores []float64)
}

// ScoredEndpoint is an endpoint with its weighted total score.
type ScoredEndpoint struct {
	Endpoint Endpoint
	Score    float64
}

// Picker chooses the target and ordered fallbacks from scored endpoints. It may reorder eps.
// Implementations must be safe for concurrent use.
type Picker interface {
	Plugin
	Pick(ctx context.Context, cs *CycleState, req *Request, eps []ScoredEndpoint) *Result
}

// Result is a scheduling decision: Targets[0] is the chosen endpoint, the rest are fallbacks in
// order of preference.
type Result struct {
	Targets []Endpoint
	// Prefill, set when the profile disaggregates prefill from decode (DisaggregationHandler)
	// and chose to, is the prefill profile's decision: its Targets[0] computes the prompt's KV
	// cache and the destination (Targets[0] of this result) pulls it. Nil otherwise.
	Prefill *Result
	// Disaggregation is the prefill/decode decision (one of PDDecisions);
	// "" when the profile has no DisaggregationHandler.
	Disaggregation string
	// State is the scheduling cycle's state, kept for the PreRequest hooks (e.g. the prefix match
	// of the chosen endpoint). The scheduler clears it when its PreRequest returns; nil afterwards
	// and for results not built by the scheduler.
	State *CycleState
	// PrefixScoring is the value of the x-switchyard-prefix-scoring response header: how the
	// prompt's prefix-cache hits were scored (set by the precise-prefix-cache-scorer's
	// PreRequest), "" when no scorer said.
	PrefixScoring string
}

// PreRequest is an optional plugin hook called with the final decision before the request is sent
// (e.g. the prefix-cache scorer records which pod now holds the prompt's blocks).
type PreRequest interface {
	Plugin
	PreRequest(ctx context.Context, req *Request, res *Result)
}

// ResponseInfo is what the front door observed about a finished request.
type ResponseInfo struct {
	Endpoint Endpoint
	// Status is the HTTP status the pod answered with (0 on connection failure).
	Status int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens when reported, else -1.
	CachedTokens int
	// PromptTokens is usage.prompt_tokens when reported, else the estimate.
	PromptTokens int
	// OutputTokens is the number of output tokens received (usage.completion_tokens when reported).
	OutputTokens int
	// TTFT is the time from sending the request to the pod until its first token arrived (0 when
	// no token arrived).
	TTFT time.Duration
	// MeanITL is the mean gap between output tokens after the first (0 with fewer than 2 tokens).
	MeanITL time.Duration
	// ClientStalled is set when the client held the answer back (the gateway waited on it to
	// accept what it wrote for more than a tenth of the attempt): TTFT and MeanITL then measure
	// the client's pace, not the pod's, and latency learning must skip them.
	ClientStalled bool
	// Err is the transport error, if the request failed without a status.
	Err error
}

// PostResponse is an optional plugin hook called when a response completes.
type PostResponse interface {
	Plugin
	PostResponse(ctx context.Context, req *Request, info *ResponseInfo)
}

// FirstToken is an optional plugin hook called when a response's first token arrives, before
// PostResponse, so latency learning does not wait for the whole generation. info carries the
// endpoint, status and TTFT; token counts may still be estimates (CachedTokens -1).
type FirstToken interface {
	Plugin
	FirstToken(ctx context.Context, req *Request, info *ResponseInfo)
}

// CycleState is per-request scratch space shared by the plugins of one scheduling cycle (for
// example the prefix scorer stores its match lengths for the predicted-TTFT scorer).
// It is safe for concurrent use.
type CycleState struct {
	// Now is the cycle's clock reading, set by the scheduler before any plugin runs and read-only
	// afterwards, so every plugin of one decision sees the same instant.
	Now time.Time
	// Owner is opaque to plugins: whoever created the state keeps its bookkeeping here (the
	// scheduler, its pooled scratch buffers). Reset leaves it alone.
	Owner any

	mu   sync.Mutex
	data map[string]any
}

// Releaser is implemented by CycleState values that return pooled memory when the cycle ends.
type Releaser interface {
	Release()
}

// Reset empties the state for reuse, calling Release on stored values that implement Releaser.
func (c *CycleState) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.data {
		if r, ok := v.(Releaser); ok {
			r.Release()
		}
		delete(c.data, k)
	}
	c.Now = time.Time{}
}

// Read returns the value stored under key, if any.
func (c *CycleState) Read(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.data[key]
	return v, ok
}

// Write stores v under key.
func (c *CycleState) Write(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil {
		c.data = make(map[string]any, 4)
	}
	c.data[key] = v
}

// Handle gives plugin factories access to gateway-wide services. Implementations must be safe for
// concurrent use.
type Handle interface {
	// Endpoints returns the current endpoints (a snapshot; do not modify the slice).
	Endpoints() []Endpoint
	// OnRemove registers f to be called with the address of every endpoint that leaves the set,
	// so plugins holding per-endpoint state can drop it. f must not block.
	OnRemove(f func(addr string))
	// Now is the scheduler's clock (injected in tests).
	Now() time.Time
	// Logger is the scheduler's logger; plugins log configuration warnings through it.
	Logger() *slog.Logger
}

// Factory builds a plugin instance from its config parameters (raw JSON; nil when absent).
type Factory func(name string, params json.RawMessage, h Handle) (Plugin, error)

// resultBuf lets a Result and a small Targets array share one allocation.
type resultBuf struct {
	r   Result
	arr [4]Endpoint
}

// NewResult returns an empty Result whose Targets has room for n endpoints, allocated together
// with the Result when n is small.
func NewResult(n int) *Result {
	if n <= len(resultBuf{}.arr) {
		b := &resultBuf{}
		b.r.Targets = b.arr[:0:n]
		return &b.r
	}
	return &Result{Targets: make([]Endpoint, 0, n)}
}

// Services is an optional Handle extension: gateway-wide services that plugin factories look up
// by name (the Service* constants). Service returns nil when the gateway does not run the
// service. Implementations must be safe for concurrent use.
type Services interface {
	Service(name string) any
}

// Names of the services a Handle may offer through Services.
const (
	// ServiceKVEventsIndex is the *kvevents.Index fed by the pods' KV cache events
	// (--kv-events-endpoint).
	ServiceKVEventsIndex = "kv-events-index"
	// ServiceKVResidentPrefixes is the *kvevents.ResidentPrefixes the
	// precise-prefix-cache-scorer feeds, when the gossiped prefix sketch is built from the index.
	ServiceKVResidentPrefixes = "kv-resident-prefixes"
	// ServiceRegisterer is the gateway's prometheus.Registerer.
	ServiceRegisterer = "prometheus-registerer"
	// ServicePeerPrefixes is the PeerPrefixes of active-active replica sharing (--replica-bind).
	ServicePeerPrefixes = "peer-prefixes"
)

// PeerPrefixes delivers the prompt prefixes that peer gateway replicas of the same cluster
// routed, so that a prefix one replica sent to a pod is found there by the others. It must be
// safe for concurrent use.
type PeerPrefixes interface {
	// OnPeerPrefix registers f, called for every prefix a peer routed: the pod it went to and
	// the prompt's chained block hashes (gossip/prefix; leading blocks the peer reported in the
	// same batch may be left out). f runs on the sharing component's goroutine: it must be safe
	// for concurrent use, must not block and must not keep hashes.
	OnPeerPrefix(f func(e Endpoint, hashes []uint64))
}

// LookupService returns the service name of h, or nil when h offers none.
func LookupService(h Handle, name string) any {
	if s, ok := h.(Services); ok {
		return s.Service(name)
	}
	return nil
}
