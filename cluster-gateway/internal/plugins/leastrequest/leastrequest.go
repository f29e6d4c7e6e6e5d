// Package leastrequest provides the least-request-picker plugin, the baseline behind the
// least-request profile: the endpoint with the fewest requests in flight from this gateway wins
// (ties at random), scores are ignored. Like Envoy's LEAST_REQUEST it uses only the gateway's own
// counts, never scraped metrics.
package leastrequest

import (
	"context"
	"encoding/json"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "least-request-picker"

func init() { framework.Register(Type, Factory) }

// Picker picks by fewest in-flight requests.
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

// Pick returns the endpoints with the fewest in-flight requests, fewest first.
func (p *Picker) Pick(_ context.Context, _ *framework.CycleState, _ *framework.Request, eps []framework.ScoredEndpoint) *framework.Result {
	for i := range eps {
		eps[i].Score = -float64(eps[i].Endpoint.InFlight())
	}
	return framework.SelectTop(eps, p.k)
}
