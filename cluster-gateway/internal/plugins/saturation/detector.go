package saturation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
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
func (u *Utilization) Filter(_ context.Context, cs *framework.CycleState, _ *framework.Request, eps []*datastore.Endpoint) []*datastore.Endpoint {
	return keepOrAll(eps, func(e *datastore.Endpoint) bool { return !u.t.Saturated(e, cs.Now) })
}

// Saturation is the average per-pod load; 1 for no candidates.
func (u *Utilization) Saturation(_ context.Context, cs *framework.CycleState, eps []*datastore.Endpoint) float64 {
	if len(eps) == 0 {
		return 1
	}
	var sum float64
	for _, e := range eps {
		sum += u.t.Load(e, cs.Now)
	}
	return sum / float64(len(eps))
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
	name     string
	max      float64
	headroom float64
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
	c := &Concurrency{name: name, max: 100}
	if p.MaxConcurrency != nil {
		c.max = float64(*p.MaxConcurrency)
	}
	if p.Headroom != nil {
		c.headroom = *p.Headroom
	}
	if c.max <= 0 || c.headroom < 0 {
		return nil, fmt.Errorf("maxConcurrency must be > 0 and headroom >= 0, got %g and %g", c.max, c.headroom)
	}
	return c, nil
}

// TypedName returns the plugin's type and name.
func (c *Concurrency) TypedName() framework.TypedName {
	return framework.TypedName{Type: ConcurrencyType, Name: c.name}
}

// Filter keeps endpoints under maxConcurrency*(1+headroom) in flight, or all when none is.
func (c *Concurrency) Filter(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []*datastore.Endpoint) []*datastore.Endpoint {
	limit := c.max * (1 + c.headroom)
	return keepOrAll(eps, func(e *datastore.Endpoint) bool { return float64(e.InFlight()) < limit })
}

// Saturation is the average in-flight/maxConcurrency; 1 for no candidates.
func (c *Concurrency) Saturation(_ context.Context, _ *framework.CycleState, eps []*datastore.Endpoint) float64 {
	if len(eps) == 0 {
		return 1
	}
	var sum float64
	for _, e := range eps {
		sum += float64(e.InFlight()) / c.max
	}
	return sum / float64(len(eps))
}

// keepOrAll compacts eps to those for which ok is true, or returns eps unchanged when none is.
func keepOrAll(eps []*datastore.Endpoint, ok func(*datastore.Endpoint) bool) []*datastore.Endpoint {
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
