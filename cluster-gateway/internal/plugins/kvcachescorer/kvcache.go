// Package kvcachescorer provides the kv-cache-utilization-scorer plugin (GIE's name and
// semantics): an endpoint scores 1 - KV-cache use, so an empty cache scores 1 and a full one 0.
package kvcachescorer

import (
	"context"
	"encoding/json"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "kv-cache-utilization-scorer"

func init() { framework.Register(Type, Factory) }

// Scorer scores by free KV cache. An endpoint with no metrics yet scores 0.
type Scorer struct{ name string }

var _ framework.Scorer = (*Scorer)(nil)

// Factory builds a Scorer; it takes no parameters.
func Factory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	if err := framework.NoParams(params); err != nil {
		return nil, err
	}
	return &Scorer{name: name}, nil
}

// TypedName returns the plugin's type and name.
func (s *Scorer) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: s.name}
}

// Score writes 1 - KVUsage, clamped to [0,1].
func (s *Scorer) Score(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []*datastore.Endpoint, scores []float64) {
	for i, e := range eps {
		m := e.Metrics()
		if m == nil {
			scores[i] = 0
			continue
		}
		scores[i] = min(1, max(0, 1-m.KVUsage))
	}
}
