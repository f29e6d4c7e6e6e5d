// Package randompicker provides the random-picker plugin (GIE's name): endpoints are chosen
// uniformly at random, ignoring scores; fallbacks are further distinct random endpoints.
package randompicker

import (
	"context"
	"encoding/json"
	"math/rand/v2"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "random-picker"

func init() { framework.Register(Type, Factory) }

// Picker picks uniformly at random.
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

// Pick returns up to maxNumOfEndpoints distinct random endpoints (a partial Fisher-Yates shuffle).
func (p *Picker) Pick(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []framework.ScoredEndpoint) *framework.Result {
	return Shuffle(eps, p.k)
}

// Shuffle moves k uniformly chosen distinct endpoints to the front of eps and returns them.
func Shuffle(eps []framework.ScoredEndpoint, k int) *framework.Result {
	k = min(k, len(eps))
	res := framework.NewResult(k)
	for j := 0; j < k; j++ {
		i := j + rand.IntN(len(eps)-j)
		eps[j], eps[i] = eps[i], eps[j]
		res.Targets = append(res.Targets, eps[j].Endpoint)
	}
	return res
}
