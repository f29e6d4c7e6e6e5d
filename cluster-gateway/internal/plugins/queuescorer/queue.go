// Package queuescorer provides the queue-scorer plugin (GIE's name and semantics): endpoints are
// scored by their scraped waiting-queue length, min-max normalised over the candidates so the
// shortest queue scores 1 and the longest 0 (all equal: 1).
package queuescorer

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "queue-scorer"

func init() { framework.Register(Type, Factory) }

// Factory builds the scorer; it takes no parameters.
var Factory = framework.ScorerFactory(Type, Score)

// Score writes min-max normalised queue scores; an endpoint with no metrics yet scores 0.
func Score(eps []framework.Endpoint, scores []float64) {
	framework.MinMaxLowIsBetter(eps, scores, func(m *framework.Metrics) float64 { return float64(m.WaitingQueue) })
}
