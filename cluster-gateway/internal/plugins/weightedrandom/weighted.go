// Package weightedrandom provides the weighted-random-picker plugin (GIE's name): endpoints are
// sampled without replacement with probability proportional to their score (A-Res: key
// u^(1/score), highest keys win). Endpoints scoring 0 come last in random order; when every score
// is 0 the choice is uniform.
package weightedrandom

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "weighted-random-picker"

func init() { framework.Register(Type, Factory) }

// Picker samples by score.
type Picker struct {
	name string
	k    int
}

var _ framework.Picker = (*Picker)(nil)

// Factory builds a Picker from framework.PickerParams.
func Factory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	k, err := framework.ParsePickerParams(params)
	if err != nil {
		return nil, err
	}
	return &Picker{name: name, k: k}, nil
}

// TypedName returns the plugin's type and name.
func (p *Picker) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: p.name}
}

// Pick replaces each score by its A-Res key (log(u)/score, a monotone form of u^(1/score)) and
// returns the top maxNumOfEndpoints keys.
func (p *Picker) Pick(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []framework.ScoredEndpoint) *framework.Result {
	for i := range eps {
		u := 1 - rand.Float64() // (0,1]
		if eps[i].Score > 0 {
			eps[i].Score = math.Log(u) / eps[i].Score
		} else {
			// Below every positive key, in random order among themselves.
			eps[i].Score = -math.MaxFloat64 / 2 * (1 + u)
		}
	}
	return framework.SelectTop(eps, p.k)
}
