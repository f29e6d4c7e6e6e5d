// Package rolefilter provides llm-d's prefill-filter and decode-filter: they keep the endpoints
// whose role (the llm-d.ai/role label, framework.RoleOf) lets them do one half of a
// disaggregated request. prefill-filter keeps role prefill and the pods labelled both (or
// prefill-decode), which take part in either role; decode-filter keeps decode and both
// (prefill-decode, or no label: an unlabelled pod serves whole requests and can decode, but is
// never another pod's prefill endpoint).
package rolefilter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// The registered plugin types.
const (
	PrefillType = "prefill-filter"
	DecodeType  = "decode-filter"
)

func init() {
	framework.Register(PrefillType, factory(PrefillType))
	framework.Register(DecodeType, factory(DecodeType))
}

// Filter keeps the endpoints of the roles it accepts.
type Filter struct {
	name    framework.TypedName
	prefill bool // true: prefill-filter; false: decode-filter
}

var _ framework.Filter = (*Filter)(nil)

func factory(typ string) framework.Factory {
	return func(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
		if err := framework.NoParams(params); err != nil {
			return nil, fmt.Errorf("%s: %w", typ, err)
		}
		return New(typ, name), nil
	}
}

// New returns the filter of type typ (PrefillType or DecodeType) named name.
func New(typ, name string) *Filter {
	return &Filter{name: framework.TypedName{Type: typ, Name: name}, prefill: typ == PrefillType}
}

// TypedName implements framework.Plugin.
func (f *Filter) TypedName() framework.TypedName { return f.name }

// Keeps reports whether the filter keeps an endpoint of role r.
func (f *Filter) Keeps(r framework.Role) bool {
	if f.prefill {
		return r == framework.RolePrefill
	}
	return r != framework.RolePrefill
}

// keepsMeta reports whether the filter keeps the endpoint m describes.
func (f *Filter) keepsMeta(m *framework.EndpointMeta) bool {
	if f.prefill {
		return framework.CanPrefillForOthers(m)
	}
	return f.Keeps(framework.RoleOf(m))
}

// Filter keeps the endpoints of the accepted roles, in order, in eps's backing array.
func (f *Filter) Filter(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	out := eps[:0]
	for _, e := range eps {
		if f.keepsMeta(e.Meta()) {
			out = append(out, e)
		}
	}
	return out
}
