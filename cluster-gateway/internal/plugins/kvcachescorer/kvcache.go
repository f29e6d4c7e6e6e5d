// Package kvcachescorer provides the kv-cache-utilization-scorer plugin (GIE's name and
// semantics): an endpoint scores 1 - KV-cache use, so an empty cache scores 1 and a full one 0.
package kvcachescorer

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "kv-cache-utilization-scorer"

func init() { framework.Register(Type, Factory) }

// Factory builds the scorer; it takes no parameters.
var Factory = framework.ScorerFactory(Type, Score)

// Score writes 1 - KVUsage, clamped to [0,1]; an endpoint with no metrics yet scores 0.
func Score(eps []framework.Endpoint, scores []float64) {
	for i, e := range eps {
		m := e.Metrics()
		if m == nil {
			scores[i] = 0
			continue
		}
		scores[i] = min(1, max(0, 1-m.KVUsage))
	}
}
