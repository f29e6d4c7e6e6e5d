// Package plugintest provides a working fake framework.Handle with an injected clock, a fake
// framework.Endpoint whose metrics, models, in-flight count, scrape failures and ejection a test
// sets, and helpers that build such endpoints, for the scheduler's plugin and scheduling tests.
package plugintest

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Epoch is the fixed start time of every fake clock.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Handle is an in-memory framework.Handle (and scheduling.EndpointSource): a mutable endpoint
// set, a manual clock and OnRemove callbacks fired by Remove. It is safe for concurrent use.
type Handle struct {
	mu       sync.Mutex
	eps      []framework.Endpoint
	now      time.Time
	onRemove []func(string)
}

var _ framework.Handle = (*Handle)(nil)

// NewHandle returns a handle holding eps with its clock at Epoch.
func NewHandle(eps ...framework.Endpoint) *Handle {
	return &Handle{eps: eps, now: Epoch}
}

// Endpoints returns the current endpoints.
func (h *Handle) Endpoints() []framework.Endpoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.eps
}

// OnRemove registers f for Remove.
func (h *Handle) OnRemove(f func(addr string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onRemove = append(h.onRemove, f)
}

// Now returns the fake clock's time.
func (h *Handle) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// Logger discards everything.
func (h *Handle) Logger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Advance moves the clock forward by d.
func (h *Handle) Advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

// Set replaces the endpoint set (without firing OnRemove).
func (h *Handle) Set(eps ...framework.Endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.eps = eps
}

// Remove drops the endpoint with addr and fires the OnRemove callbacks.
func (h *Handle) Remove(addr string) {
	h.mu.Lock()
	kept := make([]framework.Endpoint, 0, len(h.eps))
	for _, e := range h.eps {
		if e.Meta().Address != addr {
			kept = append(kept, e)
		}
	}
	h.eps = kept
	cbs := append([]func(string){}, h.onRemove...)
	h.mu.Unlock()
	for _, f := range cbs {
		f(addr)
	}
}

// Endpoint returns an endpoint serving model with the given queue, running count and KV use,
// scraped at at.
func Endpoint(addr, model string, queue, running int, kv float64, at time.Time) *FakeEndpoint {
	e := NewEndpoint(addr)
	e.SetModels(&framework.Models{Base: model, FetchedAt: at})
	e.SetMetrics(&framework.Metrics{WaitingQueue: queue, Running: running, KVUsage: kv, ScrapedAt: at})
	return e
}

// Endpoints returns eps as a []framework.Endpoint, for filters, scorers and handles.
func Endpoints(eps ...*FakeEndpoint) []framework.Endpoint {
	out := make([]framework.Endpoint, len(eps))
	for i, e := range eps {
		out[i] = e
	}
	return out
}

// SetLoad replaces e's metrics with a new scrape of queue, running and kv at at, keeping the rest.
func SetLoad(e *FakeEndpoint, queue, running int, kv float64, at time.Time) {
	m := framework.Metrics{}
	if old := e.Metrics(); old != nil {
		m = *old
	}
	m.WaitingQueue, m.Running, m.KVUsage, m.ScrapedAt = queue, running, kv, at
	e.SetMetrics(&m)
}

// Scored wraps endpoints with the given scores for picker tests.
func Scored(eps []framework.Endpoint, scores ...float64) []framework.ScoredEndpoint {
	out := make([]framework.ScoredEndpoint, len(eps))
	for i, e := range eps {
		out[i] = framework.ScoredEndpoint{Endpoint: e, Score: scores[i]}
	}
	return out
}

// WeightedEndpoints returns endpoints named and addressed a, b, c, ... whose pod label
// framework.DefaultWeightLabel holds weights[i], for the weighted pickers' tests.
func WeightedEndpoints(weights ...float64) []*FakeEndpoint {
	out := make([]*FakeEndpoint, len(weights))
	for i, w := range weights {
		out[i] = NewLabeledEndpoint(
			string(rune('a'+i)),
			map[string]string{framework.DefaultWeightLabel: strconv.FormatFloat(w, 'g', -1, 64)},
		)
	}
	return out
}

// Targets joins the addresses of res's targets, in order (with one-letter addresses, "bca").
func Targets(res *framework.Result) string {
	var b strings.Builder
	for _, e := range res.Targets {
		b.WriteString(e.Meta().Address)
	}
	return b.String()
}
