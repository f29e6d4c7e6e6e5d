package saturation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Filter is saturation-filter: it drops saturated endpoints, even when that drops all of them.
// With the pool queue-depth scope, a pod's queue depth alone does not drop it while any
// candidate is unsaturated: the scorers then choose among them.
type Filter struct {
	name string
	t    Thresholds
	pool bool
	sent bool // count the in-flight growth since the scrape in the queue depth
}

var _ framework.SaturationFilter = (*Filter)(nil)

// Queue-depth scopes of saturation-filter (its queueDepthScope parameter).
const (
	// ScopeEndpoint: a pod at or over the queue-depth threshold is dropped (the default).
	ScopeEndpoint = "endpoint"
	// ScopePool: a pod at or over the queue-depth threshold is dropped only when every candidate
	// is saturated, so the front door queues; otherwise it stays a candidate and the scorers
	// weigh its queue.
	ScopePool = "pool"
)

// FilterParams are saturation-filter's parameters: the utilization thresholds and the scope of
// the queue-depth threshold.
type FilterParams struct {
	Params
	// QueueDepthScope is "endpoint" (default) or "pool"; see ScopeEndpoint and ScopePool.
	QueueDepthScope string `json:"queueDepthScope,omitempty"`
	// CountSentSinceScrape adds to a pod's scraped queue depth, when it is not empty, what this
	// gateway sent the pod since that scrape, less what finished (default false: the scraped
	// depth alone, as GIE's saturation detector reads it). Without it, one scrape that shows
	// room lets a single flow-control pass send the whole front-door queue to the pods; with it,
	// the front door releases requests as the pods take them and each is placed when it leaves
	// the queue.
	CountSentSinceScrape bool `json:"countSentSinceScrape,omitempty"`
}

// FilterFactory builds a Filter from FilterParams.
func FilterFactory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var p FilterParams
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	t, err := p.thresholds()
	if err != nil {
		return nil, err
	}
	f := NewFilter(name, t)
	f.sent = p.CountSentSinceScrape
	switch p.QueueDepthScope {
	case "", ScopeEndpoint:
	case ScopePool:
		f.pool = true
	default:
		return nil, fmt.Errorf("queueDepthScope must be %q or %q, got %q", ScopeEndpoint, ScopePool, p.QueueDepthScope)
	}
	return f, nil
}

// NewFilter returns a saturation-filter with thresholds t and the endpoint queue-depth scope.
func NewFilter(name string, t Thresholds) *Filter { return &Filter{name: name, t: t} }

// TypedName returns the plugin's type and name.
func (f *Filter) TypedName() framework.TypedName {
	return framework.TypedName{Type: FilterType, Name: f.name}
}

// RemovesSaturated marks Filter as a saturation filter.
func (f *Filter) RemovesSaturated() {}

// Filter compacts eps in place to the unsaturated endpoints; with the pool scope, while any is
// unsaturated, to those saturated by their queue depth alone as well.
func (f *Filter) Filter(
	_ context.Context,
	cs *framework.CycleState,
	_ *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	out := eps[:0]
	room := false // a kept endpoint's queue is under the threshold
	for _, e := range eps {
		m, unfit := f.t.Unfit(e, cs.Now)
		if unfit {
			continue
		}
		full := f.queueFull(e, m)
		if full && !f.pool {
			continue
		}
		room = room || !full
		out = append(out, e)
	}
	if !room {
		return out[:0] // every endpoint saturated (with the pool scope, by its queue at least)
	}
	return out
}

// queueFull reports whether e's queue depth is at or over the threshold: the scraped depth, plus,
// when the filter counts it and the scrape showed a queue, the in-flight growth since that scrape.
// A pod with requests waiting has no room in its batch, so whatever is sent to it waits too; one
// without may start them at once, which the next scrape shows. m is e's metrics, as Unfit
// returned them.
func (f *Filter) queueFull(e framework.Endpoint, m *framework.Metrics) bool {
	waiting := float64(m.WaitingQueue)
	if f.sent && waiting > 0 {
		waiting += float64(e.InFlightSinceScrape())
	}
	return f.t.QueueOver(waiting)
}
