// Package datastore is the gateway's live view of its model-server endpoints: identity from
// discovery, the newest scraped metrics, the models each one serves, the gateway's own in-flight
// requests to it, the prefill and decode speed learned from proxied responses, and passive health.
// Readers on the scheduling hot path take lock-free snapshots.
package datastore

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// OpaqueName is the name of an endpoint that has none (a static endpoint listed as a bare
// host:port): "pod-" and the first 8 hex digits of the SHA-256 of its address. It is stable
// across restarts and gateway replicas and tells pods apart without revealing the address.
func OpaqueName(address string) string {
	sum := sha256.Sum256([]byte(address))
	return "pod-" + hex.EncodeToString(sum[:4])
}

// Engine names a model-server implementation; it selects the metric names scraped from the pod.
type Engine string

// Supported engines. The Kubernetes label inference.networking.k8s.io/engine-type carries these values.
const (
	EngineVLLM   Engine = "vllm"
	EngineSGLang Engine = "sglang"
	EngineTRTLLM Engine = "trtllm"
)

// Metrics is one scrape of a model server, normalised across engines; the scheduling
// framework's snapshot type. It is immutable once stored.
type Metrics = framework.Metrics

// Models is what a pod serves, learned from its /v1/models; the scheduling framework's type.
// Immutable once stored.
type Models = framework.Models

// Endpoint is one model-server pod. Identity fields are set at creation and never change; the
// rest is updated concurrently by the scraper and the proxy and read through the accessor methods,
// all safe for concurrent use. It implements framework.Endpoint, the scheduler's view.
type Endpoint struct {
	// EndpointMeta is the identity: Address ("ip:port", the endpoint's key), Name (the pod's,
	// the one a static list or file gives it, or else OpaqueName of the address; what
	// x-switchyard-endpoint shows) and Labels (the pod's; empty for static endpoints).
	framework.EndpointMeta
	// Engine selects the metric names.
	Engine Engine

	metrics  atomic.Pointer[Metrics]
	models   atomic.Pointer[Models]
	inFlight atomic.Int64
	// prefilling and prefillTokens count this gateway's in-flight requests to the pod still
	// waiting for their first token, and their prompt tokens.
	prefilling, prefillTokens atomic.Int64
	// inFlightAtScrape is inFlight when the newest scrape was stored (see InFlightSinceScrape).
	inFlightAtScrape atomic.Int64
	// peerInFlight, peerPrefilling and peerPrefillTokens are what the peer replicas last reported
	// for the pod; peerAtScrape is peerInFlight when the newest scrape was stored.
	peerInFlight, peerPrefilling, peerPrefillTokens, peerAtScrape atomic.Int64
	// scrapeFailures counts consecutive failed scrapes (0 after a success).
	scrapeFailures atomic.Int32
	// health is the passive outlier detector fed by proxied results (health.go).
	health health
}

// NewEndpoint returns an endpoint with no metrics yet; an empty name is OpaqueName(address).
func NewEndpoint(address, name string, engine Engine, labels map[string]string) *Endpoint {
	if name == "" {
		name = OpaqueName(address)
	}
	if engine == "" {
		engine = EngineVLLM
	}
	return &Endpoint{EndpointMeta: framework.EndpointMeta{Address: address, Name: name, Labels: labels}, Engine: engine}
}

var (
	_ framework.Endpoint = (*Endpoint)(nil)
	_ framework.PeerLoad = (*Endpoint)(nil)
)

// Meta returns the endpoint's identity (framework.Endpoint).
func (e *Endpoint) Meta() *framework.EndpointMeta { return &e.EndpointMeta }

// Metrics returns the newest scrape, or nil if none succeeded yet.
func (e *Endpoint) Metrics() *Metrics { return e.metrics.Load() }

// SetMetrics stores a new successful scrape and clears the scrape-failure count.
func (e *Endpoint) SetMetrics(m *Metrics) {
	e.inFlightAtScrape.Store(e.inFlight.Load())
	e.peerAtScrape.Store(e.peerInFlight.Load())
	e.metrics.Store(m)
	e.scrapeFailures.Store(0)
}

// MetricsAge is how old the newest successful scrape is at now, or NoMetricsAge when there is none.
func (e *Endpoint) MetricsAge(now time.Time) time.Duration {
	m := e.metrics.Load()
	if m == nil {
		return NoMetricsAge
	}
	return now.Sub(m.ScrapedAt)
}

// NoMetricsAge is the age MetricsAge reports for an endpoint never scraped successfully.
const NoMetricsAge = time.Duration(math.MaxInt64)

// RecordScrapeFailure notes that a scrape of the pod failed; metrics are left as they were.
func (e *Endpoint) RecordScrapeFailure() { e.scrapeFailures.Add(1) }

// ScrapeFailures is the number of consecutive failed scrapes (0 after a successful one).
func (e *Endpoint) ScrapeFailures() int { return int(e.scrapeFailures.Load()) }

// Stale reports whether the pod's metrics cannot be trusted at now: older than limit, never
// scraped, or the latest scrape failed. A stale pod is saturated (framework.Saturation).
func (e *Endpoint) Stale(now time.Time, limit time.Duration) bool {
	return e.scrapeFailures.Load() > 0 || e.MetricsAge(now) > limit
}

// Models returns what the pod serves, or nil if not known yet.
func (e *Endpoint) Models() *Models { return e.models.Load() }

// SetModels stores the pod's model list.
func (e *Endpoint) SetModels(m *Models) { e.models.Store(m) }

// InFlight is the number of requests the gateway has sent to the pod that have not finished,
// plus those its peer replicas last reported (SetPeerInFlight).
func (e *Endpoint) InFlight() int64 { return e.inFlight.Load() + e.peerInFlight.Load() }

// OwnInFlight is what this gateway replica has in flight to the pod: what it reports to its
// peers.
func (e *Endpoint) OwnInFlight() framework.InFlightLoad {
	return framework.InFlightLoad{
		Requests: e.inFlight.Load(), Prefilling: e.prefilling.Load(), PrefillTokens: e.prefillTokens.Load(),
	}
}

// PeerInFlight returns what the peer replicas last reported in flight (framework.PeerLoad).
func (e *Endpoint) PeerInFlight() framework.InFlightLoad {
	return framework.InFlightLoad{
		Requests: e.peerInFlight.Load(), Prefilling: e.peerPrefilling.Load(),
		PrefillTokens: e.peerPrefillTokens.Load(),
	}
}

// PeerInFlightSinceScrape is how much the peers' in-flight count grew since the newest scrape
// was stored (framework.PeerLoad).
func (e *Endpoint) PeerInFlightSinceScrape() int64 {
	return max(0, e.peerInFlight.Load()-e.peerAtScrape.Load())
}

// SetPeerInFlight stores the sum of the peer replicas' reports for the pod (negative values are
// stored as 0).
func (e *Endpoint) SetPeerInFlight(l framework.InFlightLoad) {
	e.peerInFlight.Store(max(0, l.Requests))
	e.peerPrefilling.Store(max(0, l.Prefilling))
	e.peerPrefillTokens.Store(max(0, l.PrefillTokens))
}

// InFlightSinceScrape is how much this gateway's in-flight count to the pod has grown since the
// newest scrape was stored (0 when it has not): the requests sent since then, less those that
// finished. Added to the scraped queue it is the pod's queue as the gateway last shaped it, which
// the next scrape would show; a request sent while the scrape was in the air (after the pod
// answered, before the answer was stored) is in neither until the scrape after.
func (e *Endpoint) InFlightSinceScrape() int64 {
	return max(0, e.inFlight.Load()-e.inFlightAtScrape.Load()) + e.PeerInFlightSinceScrape()
}

// AddInFlight adjusts the in-flight count by delta (+1 when a request is sent, -1 when it ends).
func (e *Endpoint) AddInFlight(delta int64) { e.inFlight.Add(delta) }

// AddPrefill adjusts the requests waiting for their first token and their prompt tokens (+1
// and the prompt when a request is sent, -1 and minus it at its first token or its end before
// one).
func (e *Endpoint) AddPrefill(requests, tokens int64) {
	e.prefilling.Add(requests)
	e.prefillTokens.Add(tokens)
}
