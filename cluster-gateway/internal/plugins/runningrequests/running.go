// Package runningrequests provides the running-requests-size-scorer plugin (GIE's name and
// semantics): endpoints are scored by the engine's running-batch size, min-max normalised over
// the candidates (fewest 1, most 0, all equal 1).
package runningrequests

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "running-requests-size-scorer"

func init() { framework.Register(Type, Factory) }

// Factory builds the scorer; it takes no parameters.
var Factory = framework.ScorerFactory(Type, Score)

// Score writes min-max normalised running-batch scores; an endpoint with no metrics yet scores 0.
func Score(eps []framework.Endpoint, scores []float64) {
	framework.MinMaxLowIsBetter(eps, scores, func(m *framework.Metrics) float64 { return float64(m.Running) })
}
