// Package runningrequests provides the running-requests-size-scorer plugin (GIE's name and
// semantics): endpoints are scored by the engine's running-batch size, min-max normalised over
// the candidates (fewest 1, most 0, all equal 1).
package runningrequests

import (
	"context"
	"encoding/json"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/queuescorer"
)

// Type is the registered plugin type.
const Type = "running-requests-size-scorer"

func init() { framework.Register(Type, Factory) }

// Scorer scores by running requests. An endpoint with no metrics yet scores 0.
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

// Score writes min-max normalised running-batch scores.
func (s *Scorer) Score(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []*datastore.Endpoint, scores []float64) {
	queuescorer.MinMaxLowIsBetter(eps, scores, func(m *datastore.Metrics) float64 { return float64(m.Running) })
}
