// Package modelfilter provides the model-filter plugin: it keeps the endpoints that serve the
// request's model. A base model is served when the pod's /v1/models lists it; a LoRA adapter when
// the pod lists it or its metrics show it resident. When no pod has the adapter, pods serving its
// base model with LoRA slots (they can load it on demand) are kept instead, or, when no pod
// reports slots, every pod serving the base model.
package modelfilter

import (
	"context"
	"encoding/json"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "model-filter"

func init() { framework.Register(Type, Factory) }

// Params are the filter's parameters.
type Params struct {
	// LoadOnDemand keeps pods that can load a missing adapter (base model served, LoRA slots
	// reported) when no pod has it. Default true.
	LoadOnDemand *bool `json:"loadOnDemand,omitempty"`
}

// Filter keeps endpoints serving the request's model. A request with no model keeps everything.
type Filter struct {
	name         string
	loadOnDemand bool
}

var _ framework.Filter = (*Filter)(nil)

// Factory builds a Filter from Params.
func Factory(name string, params json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	return New(name, p.LoadOnDemand == nil || *p.LoadOnDemand), nil
}

// New returns a Filter.
func New(name string, loadOnDemand bool) *Filter {
	return &Filter{name: name, loadOnDemand: loadOnDemand}
}

// TypedName returns the plugin's type and name.
func (f *Filter) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: f.name}
}

// Filter compacts eps in place to the endpoints serving the request's model.
func (f *Filter) Filter(
	_ context.Context,
	_ *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	model := req.Model
	if req.Adapter != "" {
		model = req.Adapter
	}
	if model == "" {
		model = req.BaseModel
	}
	if model == "" {
		return eps
	}
	kept := keep(eps, func(e framework.Endpoint) bool { return Serves(e, model, req.Adapter != "") })
	if len(kept) > 0 || req.Adapter == "" || !f.loadOnDemand || req.BaseModel == "" {
		return kept
	}
	if kept = keep(eps, func(e framework.Endpoint) bool { return canLoad(e, req.BaseModel) }); len(kept) > 0 {
		return kept
	}
	// No pod reports LoRA slots: trust the adapter's mapping to its base model (body-based
	// routing resolved it from the adapter map) and keep the pods serving the base.
	return keep(eps, func(e framework.Endpoint) bool { return e.Models().Serves(req.BaseModel) })
}

// Serves reports whether e serves model (an adapter when adapter is true).
func Serves(e framework.Endpoint, model string, adapter bool) bool {
	if e.Models().Serves(model) {
		return true
	}
	if m := e.Metrics(); adapter && m != nil && m.HasAdapter(model) {
		return true
	}
	return false
}

func canLoad(e framework.Endpoint, base string) bool {
	ms, m := e.Models(), e.Metrics()
	return ms != nil && ms.Base == base && m != nil && m.MaxLoRA > 0
}

// keep compacts eps in place to the endpoints for which ok is true. When nothing matches, eps is
// left untouched and an empty slice returned, so a caller can still try another rule on eps.
func keep(eps []framework.Endpoint, ok func(framework.Endpoint) bool) []framework.Endpoint {
	first := -1
	for i, e := range eps {
		if ok(e) {
			first = i
			break
		}
	}
	if first < 0 {
		return eps[:0]
	}
	out := eps[:0]
	for _, e := range eps[first:] {
		if ok(e) {
			out = append(out, e)
		}
	}
	return out
}
