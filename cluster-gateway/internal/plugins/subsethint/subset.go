// Package subsethint provides the subset-hint-filter plugin: when the request carries Envoy's
// subset hint (envoy.lb.subset_hint), only the endpoints whose address is listed are kept.
package subsethint

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "subset-hint-filter"

func init() { framework.Register(Type, Factory) }

// Filter honours req.SubsetHint. With no hint every endpoint is kept.
type Filter struct{ name string }

var _ framework.Filter = (*Filter)(nil)

// Factory builds a Filter; it takes no parameters.
func Factory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	if err := framework.NoParams(params); err != nil {
		return nil, err
	}
	return New(name), nil
}

// New returns a Filter.
func New(name string) *Filter { return &Filter{name: name} }

// TypedName returns the plugin's type and name.
func (f *Filter) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: f.name}
}

// Filter compacts eps in place to the hinted addresses.
func (f *Filter) Filter(
	_ context.Context,
	_ *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	if len(req.SubsetHint) == 0 {
		return eps
	}
	out := eps[:0]
	for _, e := range eps {
		if slices.Contains(req.SubsetHint, e.Meta().Address) {
			out = append(out, e)
		}
	}
	return out
}
