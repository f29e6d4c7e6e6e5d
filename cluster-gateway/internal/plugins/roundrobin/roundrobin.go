// Package roundrobin provides the round-robin-picker plugin, the baseline behind the round-robin
// profile: per request, the next endpoint in address order, like a Kubernetes Service in IPVS
// round-robin mode or HAProxy's "balance roundrobin". Scores are ignored; the following endpoints
// in the rotation are the fallbacks.
package roundrobin

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "round-robin-picker"

func init() { framework.Register(Type, Factory) }

// Picker rotates over the candidates. It is safe for concurrent use.
type Picker struct {
	name string
	k    int
	next atomic.Uint64
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

// Pick returns the next endpoint in the rotation and the ones after it.
func (p *Picker) Pick(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	eps []framework.ScoredEndpoint,
) *framework.Result {
	n := len(eps)
	k := min(p.k, n)
	res := framework.NewResult(k)
	if n == 0 {
		return res
	}
	start := int((p.next.Add(1) - 1) % uint64(n))
	for j := 0; j < k; j++ {
		res.Targets = append(res.Targets, eps[(start+j)%n].Endpoint)
	}
	return res
}
