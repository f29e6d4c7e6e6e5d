// Package queuescorer provides the queue-scorer plugin (GIE's name and semantics): endpoints are
// scored by their scraped waiting-queue length, min-max normalised over the candidates so the
// shortest queue scores 1 and the longest 0 (all equal: 1).
package queuescorer

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "queue-scorer"

func init() { framework.Register(Type, Factory) }

// Factory builds the scorer; it takes no parameters.
var Factory = framework.ScorerFactory(Type, Score)

// Score writes min-max normalised queue scores; an endpoint with no metrics yet scores 0.
func Score(eps []*datastore.Endpoint, scores []float64) {
	MinMaxLowIsBetter(eps, scores, func(m *datastore.Metrics) float64 { return float64(m.WaitingQueue) })
}

// MinMaxLowIsBetter scores eps by value(metrics), lowest 1, highest 0, linear between; all equal
// gives 1; endpoints without metrics score 0 and do not take part in the range.
func MinMaxLowIsBetter(eps []*datastore.Endpoint, scores []float64, value func(*datastore.Metrics) float64) {
	lo, hi, any := 0.0, 0.0, false
	for _, e := range eps {
		m := e.Metrics()
		if m == nil {
			continue
		}
		v := value(m)
		if !any || v < lo {
			lo = v
		}
		if !any || v > hi {
			hi = v
		}
		any = true
	}
	for i, e := range eps {
		m := e.Metrics()
		switch {
		case m == nil:
			scores[i] = 0
		case hi == lo:
			scores[i] = 1
		default:
			scores[i] = (hi - value(m)) / (hi - lo)
		}
	}
}
