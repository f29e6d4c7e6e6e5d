// Package weightedroundrobin provides the weighted-round-robin-picker plugin, the baseline behind
// the weighted-round-robin profile: capacity-weighted rotation, what an operator gets from a
// load balancer's weighted round robin (HAProxy "balance roundrobin" with server weights, Envoy's
// ROUND_ROBIN with load_balancing_weight) with each pod's weight set from its measured capacity
// (framework.WeightParams: a pod label, or a table keyed by a label such as the GPU type).
//
// The rotation is smooth weighted round robin (nginx's): at every pick each candidate's current
// value grows by its weight, the candidate with the highest current value is chosen (ties: the
// first in address order) and its current value drops by the candidates' total weight. Over any
// run of picks each pod gets its weight's share, spread out rather than in runs (weights 5, 1, 1
// give a a b a c a a). Scores and load are ignored; the fallbacks are the next highest current
// values. With equal weights it is the plain round-robin-picker's rotation.
package weightedroundrobin

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "weighted-round-robin-picker"

func init() { framework.Register(Type, Factory) }

// Picker is the smooth weighted round-robin picker. It is safe for concurrent use.
type Picker struct {
	name string
	k    int

	mu   sync.Mutex
	pods *framework.WeightedStates[float64] // per endpoint: weight and current value
}

var _ framework.Picker = (*Picker)(nil)

// Factory builds a Picker from framework.WeightedPickerParams; with a Handle it drops the state
// of endpoints that leave the set.
func Factory(name string, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	return framework.WeightedPickerFactory(name, raw, h, New, (*Picker).retain)
}

// New returns a picker with parameters p (defaults applied); log receives the warnings about
// unusable weight labels and may be nil.
func New(name string, p framework.WeightedPickerParams, log *slog.Logger) (*Picker, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, err
	}
	return &Picker{
		name: name,
		k:    p.MaxNumOfEndpoints,
		pods: framework.NewWeightedStates[float64](p.WeightParams, log),
	}, nil
}

// TypedName returns the plugin's type and name.
func (p *Picker) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: p.name}
}

// Pick advances the rotation over the candidates and returns the chosen endpoint, then the
// fallbacks by current value.
func (p *Picker) Pick(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	eps []framework.ScoredEndpoint,
) *framework.Result {
	if len(eps) == 0 {
		return framework.NewResult(0)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0.0
	for i := range eps {
		st := p.pods.Get(eps[i].Endpoint)
		st.State += st.Weight
		total += st.Weight
		eps[i].Score = st.State
	}
	res := framework.SelectBest(eps, p.k, higher)
	p.pods.Get(res.Targets[0]).State -= total
	return res
}

// higher ranks by current value, highest first.
func higher(a, b *framework.ScoredEndpoint) bool { return a.Score > b.Score }

func (p *Picker) retain(eps []framework.Endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods.Retain(eps)
}
