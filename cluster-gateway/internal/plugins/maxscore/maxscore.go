// Package maxscore provides the max-score-picker plugin (GIE's name): the highest total score
// wins, ties broken at random; the next best follow as fallbacks.
package maxscore

import (
	"context"
	"encoding/json"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "max-score-picker"

func init() { framework.Register(Type, Factory) }

// Picker picks by maximum score.
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

// Pick returns up to maxNumOfEndpoints endpoints, best first.
func (p *Picker) Pick(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []framework.ScoredEndpoint) *framework.Result {
	return framework.SelectTop(eps, p.k)
}
