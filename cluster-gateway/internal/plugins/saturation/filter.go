package saturation

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Filter is saturation-filter: it drops saturated endpoints, even when that drops all of them.
type Filter struct {
	name string
	t    Thresholds
}

var _ framework.SaturationFilter = (*Filter)(nil)

// FilterFactory builds a Filter from Params.
func FilterFactory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	t, err := p.thresholds()
	if err != nil {
		return nil, err
	}
	return NewFilter(name, t), nil
}

// NewFilter returns a saturation-filter with thresholds t.
func NewFilter(name string, t Thresholds) *Filter { return &Filter{name: name, t: t} }

// TypedName returns the plugin's type and name.
func (f *Filter) TypedName() framework.TypedName {
	return framework.TypedName{Type: FilterType, Name: f.name}
}

// RemovesSaturated marks Filter as a saturation filter.
func (f *Filter) RemovesSaturated() {}

// Filter compacts eps in place to the unsaturated endpoints.
func (f *Filter) Filter(_ context.Context, cs *framework.CycleState, _ *framework.Request, eps []*datastore.Endpoint) []*datastore.Endpoint {
	out := eps[:0]
	for _, e := range eps {
		if !f.t.Saturated(e, cs.Now) {
			out = append(out, e)
		}
	}
	return out
}

// Saturated reports whether e is saturated at now: ejected, metrics stale or failing, or queue or
// KV use at or above threshold*(1+headroom).
func (t Thresholds) Saturated(e *datastore.Endpoint, now time.Time) bool {
	if e.Ejected(now) || e.Stale(now, t.Staleness) {
		return true
	}
	m := e.Metrics()
	q := float64(t.Queue) * (1 + t.Headroom)
	return float64(m.WaitingQueue) >= q || m.KVUsage >= t.KV*(1+t.Headroom)
}

// Load is GIE's per-pod saturation score: max(queue/queueThreshold, kv/kvThreshold), 1 when
// the metrics are stale.
func (t Thresholds) Load(e *datastore.Endpoint, now time.Time) float64 {
	if e.Stale(now, t.Staleness) {
		return 1
	}
	m := e.Metrics()
	return max(float64(m.WaitingQueue)/float64(t.Queue), m.KVUsage/t.KV)
}
