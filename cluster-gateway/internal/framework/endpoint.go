package framework

import "time"

// Endpoint is one model-server pod as the scheduler, its plugins and the capacity publisher see
// it: its identity, the newest scraped metrics, what it serves, and the live figures the gateway
// keeps about it (its own in-flight requests, freshness, passive health). It plays the part of
// GIE's scheduling Pod (GetPod for identity, GetMetrics for the scraped snapshot).
//
// The gateway's datastore.Endpoint implements it; plugintest.Endpoint is a fake for tests.
// Implementations must be safe for concurrent use, and every method must be cheap and must not
// allocate: plugins call them for every candidate of every scheduling cycle. An Endpoint is
// comparable (implementations are pointers); per-endpoint plugin state is best keyed by Meta(),
// a stable pointer unique to the endpoint, whose map lookups are cheaper than an interface key's.
type Endpoint interface {
	// Meta returns the endpoint's identity. It never changes for the endpoint's lifetime (a pod
	// whose identity changes is a new Endpoint).
	Meta() *EndpointMeta
	// Metrics returns the newest successful scrape, or nil before the first. The snapshot is
	// immutable; a new scrape replaces it.
	Metrics() *Metrics
	// Models returns what the pod serves, or nil while that is not known yet. Immutable.
	Models() *Models
	// InFlight is the number of requests this gateway sent to the pod that have not finished,
	// plus those its peer replicas (same cluster, --replica-bind) last reported: with active-active
	// replicas every one sees the load all of them put on the pod.
	InFlight() int64
	// InFlightSinceScrape is how much InFlight grew since the newest scrape was stored (0 when it
	// has not): requests sent since then, less those that finished, which that scrape cannot show.
	InFlightSinceScrape() int64
	// Stale reports whether the metrics cannot be trusted at now: older than limit, never
	// scraped, or the latest scrape failed.
	Stale(now time.Time, limit time.Duration) bool
	// Ejected reports whether passive health holds the pod in an ejection backoff at now.
	Ejected(now time.Time) bool
}

// PeerLoad is implemented by endpoints whose InFlight includes requests that peer gateway
// replicas routed (datastore.Endpoint). Plugins that keep their own account of this gateway's
// requests (the predicted-TTFT scorer) find it by type assertion to count the peers' apart.
type PeerLoad interface {
	// PeerInFlight returns what the peer replicas last reported in flight to the pod (zeros with
	// no peers, or when their reports have aged out).
	PeerInFlight() InFlightLoad
	// PeerInFlightSinceScrape is how much the peers' in-flight requests grew since the newest
	// scrape was stored (0 when they did not): requests that scrape cannot show.
	PeerInFlightSinceScrape() int64
}

// InFlightLoad is what one or more gateway replicas have in flight to a pod.
type InFlightLoad struct {
	// Requests are the requests sent that have not finished.
	Requests int64
	// Prefilling are those of them still waiting for their first token, and PrefillTokens their
	// prompt tokens: the prefill work they may still put on the pod.
	Prefilling, PrefillTokens int64
}

// EndpointMeta is an endpoint's identity, set when discovery reports it and never changed.
type EndpointMeta struct {
	// Address is "ip:port" of the model server; it is the endpoint's key.
	Address string
	// Name is the endpoint's name: its pod's (InferencePool discovery), the one a static list or
	// file gives it, or an opaque name derived from its address. It is what x-switchyard-endpoint
	// shows.
	Name string
	// Labels are the pod's labels (empty for static endpoints). Read-only.
	Labels map[string]string
}

// Metrics is one scrape of a model server, normalised across engines. It is immutable once
// stored.
type Metrics struct {
	// WaitingQueue is the number of requests waiting to be scheduled by the engine.
	WaitingQueue int
	// Running is the number of requests in the engine's running batch.
	Running int
	// KVUsage is the fraction of KV-cache blocks in use, 0..1.
	KVUsage float64
	// KVBlockSize is tokens per KV block; KVTotalBlocks the block count (0 when not reported).
	KVBlockSize   int
	KVTotalBlocks int
	// ActiveAdapters and WaitingAdapters are the LoRA adapters in use and waiting (vLLM only).
	ActiveAdapters  []string
	WaitingAdapters []string
	// MaxLoRA is the number of adapter slots (0 when not reported).
	MaxLoRA int
	// PrefixHits and PrefixQueries are the engine's cumulative prefix-cache counters, in tokens,
	// when it exports them.
	PrefixHits, PrefixQueries float64
	// ScrapedAt is when the scrape completed.
	ScrapedAt time.Time
}

// KVTotalTokens is the KV capacity in tokens, or 0 when unknown.
func (m *Metrics) KVTotalTokens() int { return m.KVBlockSize * m.KVTotalBlocks }

// HasAdapter reports whether adapter is resident (active or waiting) on the pod per its metrics.
func (m *Metrics) HasAdapter(adapter string) bool {
	for _, a := range m.ActiveAdapters {
		if a == adapter {
			return true
		}
	}
	for _, a := range m.WaitingAdapters {
		if a == adapter {
			return true
		}
	}
	return false
}

// Models is what a pod serves, learned from its /v1/models. Immutable once stored.
type Models struct {
	// Base is the base model name (the entry whose parent/root is itself).
	Base string
	// Adapters are the LoRA adapters the pod has loaded or can serve.
	Adapters []string
	// FetchedAt is when the list was read.
	FetchedAt time.Time
}

// Serves reports whether the pod serves model, either as its base model or as an adapter. It is
// false for a nil Models.
func (m *Models) Serves(model string) bool {
	if m == nil {
		return false
	}
	if m.Base == model {
		return true
	}
	for _, a := range m.Adapters {
		if a == model {
			return true
		}
	}
	return false
}
