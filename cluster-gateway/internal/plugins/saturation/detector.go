package saturation

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Utilization is utilization-detector (GIE semantics): as a filter it keeps the unsaturated
// endpoints, or all of them when every one is saturated; as the pool detector it reports the
// average per-pod load max(queue/queueThreshold, kv/kvThreshold), stale pods counting 1.
type Utilization struct {
	name string
	t    Thresholds
}

var (
	_ framework.Filter             = (*Utilization)(nil)
	_ framework.SaturationDetector = (*Utilization)(nil)
)

// UtilizationFactory builds a Utilization detector from Params.
func UtilizationFactory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	t, err := p.thresholds()
	if err != nil {
		return nil, err
	}
	return &Utilization{name: name, t: t}, nil
}

// TypedName returns the plugin's type and name.
func (u *Utilization) TypedName() framework.TypedName {
	return framework.TypedName{Type: UtilizationType, Name: u.name}
}

// Filter keeps unsaturated endpoints, or every endpoint when none is unsaturated.
func (u *Utilization) Filter(
	_ context.Context,
	cs *framework.CycleState,
	_ *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	return keepOrAll(eps, func(e framework.Endpoint) bool { return !u.t.Saturated(e, cs.Now) })
}

// Saturation is the pool's saturation figure, framework.MeanLoad of the thresholds' per-pod
// load; 1 for no candidates.
func (u *Utilization) Saturation(_ context.Context, cs *framework.CycleState, eps []framework.Endpoint) float64 {
	return framework.MeanLoad(&u.t, eps, cs.Now)
}

// ConcurrencyParams are concurrency-detector's parameters (GIE names). Only the "requests" mode
// is supported: the gateway counts requests, not tokens, in flight.
type ConcurrencyParams struct {
	ConcurrencyMode     string   `json:"concurrencyMode,omitempty"`
	MaxConcurrency      *int64   `json:"maxConcurrency,omitempty"`
	MaxTokenConcurrency *int64   `json:"maxTokenConcurrency,omitempty"`
	Headroom            *float64 `json:"headroom,omitempty"`
}

// Concurrency is concurrency-detector: load is the gateway's in-flight requests to a pod over
// maxConcurrency (default 100).
type Concurrency struct {
	name  string
	limit concurrencyLimit
}

// concurrencyLimit is concurrency-detector's saturation criterion: a pod is saturated at
// max·(1+headroom) requests in flight from this gateway, and its load is in-flight/max.
type concurrencyLimit struct {
	max      float64
	headroom float64
}

var _ framework.Loader = (*concurrencyLimit)(nil)

// Saturated reports whether e has max·(1+headroom) or more requests in flight.
func (c *concurrencyLimit) Saturated(e framework.Endpoint) bool {
	return float64(e.InFlight()) >= c.max*(1+c.headroom)
}

// Load is e's in-flight requests over max.
func (c *concurrencyLimit) Load(e framework.Endpoint, _ time.Time) float64 {
	return float64(e.InFlight()) / c.max
}

var (
	_ framework.Filter             = (*Concurrency)(nil)
	_ framework.SaturationDetector = (*Concurrency)(nil)
)

// ConcurrencyFactory builds a Concurrency detector from ConcurrencyParams.
func ConcurrencyFactory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var p ConcurrencyParams
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.ConcurrencyMode != "" && p.ConcurrencyMode != "requests" {
		return nil, fmt.Errorf("concurrencyMode %q is not supported (only \"requests\")", p.ConcurrencyMode)
	}
	l := concurrencyLimit{max: 100}
	if p.MaxConcurrency != nil {
		l.max = float64(*p.MaxConcurrency)
	}
	if p.Headroom != nil {
		l.headroom = *p.Headroom
	}
	if l.max <= 0 || l.headroom < 0 {
		return nil, fmt.Errorf("maxConcurrency must be > 0 and headroom >= 0, got %g and %g", l.max, l.headroom)
	}
	return &Concurrency{name: name, limit: l}, nil
}

// TypedName returns the plugin's type and name.
func (c *Concurrency) TypedName() framework.TypedName {
	return framework.TypedName{Type: ConcurrencyType, Name: c.name}
}

// Filter keeps endpoints under maxConcurrency*(1+headroom) in flight, or all when none is.
func (c *Concurrency) Filter(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	return keepOrAll(eps, func(e framework.Endpoint) bool { return !c.limit.Saturated(e) })
}

// Saturation is the pool's saturation figure, framework.MeanLoad of in-flight/maxConcurrency;
// 1 for no candidates.
func (c *Concurrency) Saturation(_ context.Context, _ *framework.CycleState, eps []framework.Endpoint) float64 {
	return framework.MeanLoad(&c.limit, eps, time.Time{}) // in-flight load does not age
}

// keepOrAll compacts eps to those for which ok is true, or returns eps unchanged when none is.
func keepOrAll(eps []framework.Endpoint, ok func(framework.Endpoint) bool) []framework.Endpoint {
	n := 0
	for _, e := range eps {
		if ok(e) {
			n++
		}
	}
	if n == 0 || n == len(eps) {
		return eps
	}
	out := eps[:0]
	for _, e := range eps {
		if ok(e) {
			out = append(out, e)
		}
	}
	return out
}
