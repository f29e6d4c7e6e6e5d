package framework

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
)

// DefaultWeightLabel is the pod label the weighted baseline pickers read an endpoint's weight
// from: a positive decimal number, the pod's capacity relative to the others' (for example the
// request rate of the operator's workload it sustains, measured once per GPU type). A label
// value is at most 63 characters of [A-Za-z0-9._-], so "15.75" is a valid value.
const DefaultWeightLabel = "switchyard.dev/weight"

// MinWeight and MaxWeight bound every weight, so that sums and reciprocals over any pool stay
// exact enough in float64 and one misconfigured pod cannot take every request by a weight of
// 1e300 (or none by 1e-300).
const (
	MinWeight = 1e-6
	MaxWeight = 1e6
)

// WeightParams are the parameters shared by the weighted pickers (weighted-round-robin-picker,
// p2c-picker, leastconn-picker): where an endpoint's weight comes from. In order of precedence:
// the pod label WeightLabel when it holds a valid number; else WeightsByLabel, a table keyed by
// the value of another pod label (per GPU type, say); else DefaultWeight. Static endpoints get
// labels from an endpoints file (--endpoints-file); InferencePool pods from their pod template.
type WeightParams struct {
	// WeightLabel is the pod label holding the weight. Default DefaultWeightLabel.
	WeightLabel string `json:"weightLabel,omitempty"`
	// WeightsByLabel, when set, gives the weight of pods without a valid WeightLabel by the
	// value of another label.
	WeightsByLabel *LabelWeights `json:"weightsByLabel,omitempty"`
	// DefaultWeight is the weight of a pod that neither gives. Default 1.
	DefaultWeight float64 `json:"defaultWeight,omitempty"`
}

// LabelWeights is a weight table keyed by a pod label's value, e.g. label switchyard.dev/gpu
// with weights {h100: 15.75, a10g: 1.23}.
type LabelWeights struct {
	// Label is the pod label whose value selects the weight.
	Label string `json:"label"`
	// Weights maps a value of Label to a weight in [MinWeight, MaxWeight].
	Weights map[string]float64 `json:"weights"`
}

// ErrBadWeight is wrapped by the error WeightParams.Weight returns for an unusable weight label.
var ErrBadWeight = errors.New("framework: bad weight label")

// Normalize returns p with its defaults applied, or an error naming the invalid parameter.
func (p WeightParams) Normalize() (WeightParams, error) {
	if p.WeightLabel == "" {
		p.WeightLabel = DefaultWeightLabel
	}
	if p.DefaultWeight == 0 {
		p.DefaultWeight = 1
	}
	if err := checkWeight(p.DefaultWeight); err != nil {
		return p, fmt.Errorf("parameters: defaultWeight: %w", err)
	}
	if t := p.WeightsByLabel; t != nil {
		if strings.TrimSpace(t.Label) == "" {
			return p, errors.New("parameters: weightsByLabel.label: required")
		}
		if len(t.Weights) == 0 {
			return p, errors.New("parameters: weightsByLabel.weights: at least one value required")
		}
		for v, w := range t.Weights {
			if err := checkWeight(w); err != nil {
				return p, fmt.Errorf("parameters: weightsByLabel.weights[%q]: %w", v, err)
			}
		}
	}
	return p, nil
}

// Weight returns the weight of the endpoint meta describes, from p as Normalize returned it.
// When meta carries WeightLabel with a value that is not a number in [MinWeight, MaxWeight], the
// weight falls back to the table or DefaultWeight and the error (wrapping ErrBadWeight) says
// why, for the caller to log once per endpoint.
func (p WeightParams) Weight(meta *EndpointMeta) (float64, error) {
	var bad error
	if v, ok := meta.Labels[p.WeightLabel]; ok {
		w, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			err = errors.New("not a number")
		} else {
			err = checkWeight(w)
		}
		if err == nil {
			return w, nil
		}
		bad = fmt.Errorf("%w: %s=%q on %s: %v", ErrBadWeight, p.WeightLabel, v, meta.Address, err)
	}
	if t := p.WeightsByLabel; t != nil {
		if w, ok := t.Weights[meta.Labels[t.Label]]; ok {
			return w, bad
		}
	}
	return p.DefaultWeight, bad
}

// checkWeight accepts a weight in [MinWeight, MaxWeight].
func checkWeight(w float64) error {
	if math.IsNaN(w) || w < MinWeight || w > MaxWeight {
		return fmt.Errorf("%v is not in [%g, %g]", w, MinWeight, MaxWeight)
	}
	return nil
}

// Weighted is one endpoint's entry in WeightedStates: its weight and the picker's state S.
type Weighted[S any] struct {
	Weight float64
	State  S
}

// WeightedStates holds a weighted picker's per-endpoint state, keyed by Meta (stable for the
// endpoint's lifetime, so a pod's labels, and with them its weight, are read once). A bad
// weight label is logged once, when the endpoint is first seen. It is not safe for concurrent
// use: the picker serialises its calls.
type WeightedStates[S any] struct {
	params WeightParams
	log    *slog.Logger
	m      map[*EndpointMeta]*Weighted[S]
}

// NewWeightedStates returns an empty set weighing endpoints by p (as Normalize returned it);
// log may be nil.
func NewWeightedStates[S any](p WeightParams, log *slog.Logger) *WeightedStates[S] {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &WeightedStates[S]{params: p, log: log, m: make(map[*EndpointMeta]*Weighted[S])}
}

// Get returns e's entry, creating it (zero state, weight resolved) on first sight.
func (w *WeightedStates[S]) Get(e Endpoint) *Weighted[S] {
	meta := e.Meta()
	if st, ok := w.m[meta]; ok {
		return st
	}
	weight, err := w.params.Weight(meta)
	if err != nil {
		w.log.Warn("endpoint weight label ignored", "endpoint", meta.Address, "label", w.params.WeightLabel,
			"weight", weight, "err", err)
	}
	st := &Weighted[S]{Weight: weight}
	w.m[meta] = st
	return st
}

// Lookup returns e's entry, or nil when e has none (never seen, or dropped by Retain).
func (w *WeightedStates[S]) Lookup(e Endpoint) *Weighted[S] { return w.m[e.Meta()] }

// Retain drops the entries of endpoints not in eps (call it when endpoints leave the set).
func (w *WeightedStates[S]) Retain(eps []Endpoint) {
	keep := make(map[*EndpointMeta]bool, len(eps))
	for _, e := range eps {
		keep[e.Meta()] = true
	}
	for meta := range w.m {
		if !keep[meta] {
			delete(w.m, meta)
		}
	}
}

// Len is the number of endpoints held.
func (w *WeightedStates[S]) Len() int { return len(w.m) }

// WeightedPickerParams are the parameters every weighted picker takes: GIE's maxNumOfEndpoints
// and the weight source.
type WeightedPickerParams struct {
	PickerParams
	WeightParams
}

// Normalize returns p with its defaults applied (maxNumOfEndpoints 3, the weight source's), or
// an error naming the invalid parameter.
func (p WeightedPickerParams) Normalize() (WeightedPickerParams, error) {
	if p.MaxNumOfEndpoints <= 0 {
		p.MaxNumOfEndpoints = DefaultMaxNumOfEndpoints
	}
	var err error
	p.WeightParams, err = p.WeightParams.Normalize()
	return p, err
}

// WeightedPickerFactory is the Factory of a weighted picker: it decodes WeightedPickerParams
// from raw, builds the picker with build (given the Handle's logger for the warnings about
// unusable weight labels, nil without a Handle) and, with a Handle, calls retain with the
// remaining endpoints whenever one leaves the set, so the picker drops that endpoint's state.
func WeightedPickerFactory[P Plugin](name string, raw json.RawMessage, h Handle,
	build func(string, WeightedPickerParams, *slog.Logger) (P, error), retain func(P, []Endpoint),
) (Plugin, error) {
	var p WeightedPickerParams
	if err := DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	var log *slog.Logger
	if h != nil {
		log = h.Logger()
	}
	pk, err := build(name, p, log)
	if err != nil {
		return nil, err
	}
	if h != nil {
		h.OnRemove(func(string) { retain(pk, h.Endpoints()) })
	}
	return pk, nil
}
