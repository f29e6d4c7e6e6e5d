package plugintest

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// FakeEndpoint is a framework.Endpoint whose state a test sets: metrics, models, the in-flight
// count, scrape failures and ejection. Staleness and in-flight accounting follow the gateway's
// datastore.Endpoint: metrics are stale when older than the limit, absent, or when a scrape
// failed since the last one stored; InFlightSinceScrape is the in-flight growth since then.
// It is safe for concurrent use.
type FakeEndpoint struct {
	meta             framework.EndpointMeta
	metrics          atomic.Pointer[framework.Metrics]
	models           atomic.Pointer[framework.Models]
	inFlight         atomic.Int64
	inFlightAtScrape atomic.Int64
	scrapeFailed     atomic.Bool
	ejectedUntil     atomic.Int64 // Unix ns; 0 = never ejected
}

var _ framework.Endpoint = (*FakeEndpoint)(nil)

// NewEndpoint returns an endpoint at addr, named addr, with no metrics and no models yet.
func NewEndpoint(addr string) *FakeEndpoint {
	return &FakeEndpoint{meta: framework.EndpointMeta{Address: addr, Name: addr}}
}

// NewLabeledEndpoint returns NewEndpoint(addr) carrying the pod labels labels.
func NewLabeledEndpoint(addr string, labels map[string]string) *FakeEndpoint {
	e := NewEndpoint(addr)
	e.meta.Labels = labels
	return e
}

// Meta returns the endpoint's identity.
func (e *FakeEndpoint) Meta() *framework.EndpointMeta { return &e.meta }

// Metrics returns the newest scrape set, or nil.
func (e *FakeEndpoint) Metrics() *framework.Metrics { return e.metrics.Load() }

// SetMetrics stores a successful scrape: it clears a scrape failure and marks the in-flight
// count the scrape saw.
func (e *FakeEndpoint) SetMetrics(m *framework.Metrics) {
	e.inFlightAtScrape.Store(e.inFlight.Load())
	e.metrics.Store(m)
	e.scrapeFailed.Store(false)
}

// Models returns the model list set, or nil.
func (e *FakeEndpoint) Models() *framework.Models { return e.models.Load() }

// SetModels stores the model list.
func (e *FakeEndpoint) SetModels(m *framework.Models) { e.models.Store(m) }

// InFlight is the in-flight count.
func (e *FakeEndpoint) InFlight() int64 { return e.inFlight.Load() }

// AddInFlight adjusts the in-flight count by delta.
func (e *FakeEndpoint) AddInFlight(delta int64) { e.inFlight.Add(delta) }

// InFlightSinceScrape is the in-flight growth since the last SetMetrics, at least 0.
func (e *FakeEndpoint) InFlightSinceScrape() int64 {
	return max(0, e.inFlight.Load()-e.inFlightAtScrape.Load())
}

// RecordScrapeFailure makes the metrics stale until the next SetMetrics.
func (e *FakeEndpoint) RecordScrapeFailure() { e.scrapeFailed.Store(true) }

// Stale reports whether the metrics are absent, older than limit at now, or a scrape failed.
func (e *FakeEndpoint) Stale(now time.Time, limit time.Duration) bool {
	if e.scrapeFailed.Load() {
		return true
	}
	m := e.metrics.Load()
	age := time.Duration(math.MaxInt64)
	if m != nil {
		age = now.Sub(m.ScrapedAt)
	}
	return age > limit
}

// EjectUntil holds the endpoint in an ejection backoff until t (the zero time ends it).
func (e *FakeEndpoint) EjectUntil(t time.Time) {
	if t.IsZero() {
		e.ejectedUntil.Store(0)
		return
	}
	e.ejectedUntil.Store(t.UnixNano())
}

// Ejected reports whether now is before the end of an ejection set with EjectUntil.
func (e *FakeEndpoint) Ejected(now time.Time) bool {
	return now.UnixNano() < e.ejectedUntil.Load()
}
