// Package loraaffinity provides the lora-affinity-scorer plugin (GIE's name and semantics): for a
// request naming a LoRA adapter, an endpoint where the adapter is active scores 1, one with a free
// adapter slot 0.8, one where it is only waiting 0.6, and the rest 0. Requests for a base model
// score 1 everywhere (neutral).
package loraaffinity

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "lora-affinity-scorer"

// Scores for the adapter's state on an endpoint (GIE's values).
const (
	ScoreActive   = 1.0
	ScoreFreeSlot = 0.8
	ScoreWaiting  = 0.6
)

func init() { framework.Register(Type, Factory) }

// Scorer scores adapter residency.
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

// Score writes each endpoint's adapter-residency score.
func (s *Scorer) Score(
	_ context.Context,
	_ *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
	scores []float64,
) {
	for i, e := range eps {
		scores[i] = score(req.Adapter, e.Metrics())
	}
}

func score(adapter string, m *framework.Metrics) float64 {
	switch {
	case adapter == "":
		return 1
	case m == nil:
		return 0
	case slices.Contains(m.ActiveAdapters, adapter):
		return ScoreActive
	case len(m.ActiveAdapters)+len(m.WaitingAdapters) < m.MaxLoRA:
		return ScoreFreeSlot
	case slices.Contains(m.WaitingAdapters, adapter):
		return ScoreWaiting
	default:
		return 0
	}
}
