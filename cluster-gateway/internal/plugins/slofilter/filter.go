// Package slofilter provides the slo-filter plugin (Switchyard's): for a request that carries
// latency objectives (x-slo-ttft-ms, x-slo-tpot-ms; framework.Request.SLO) it keeps the
// candidates predicted to meet both. The predictions come from the profile's latency model, the
// predicted-ttft-scorer's learned per-pod model: its predicted time to first token, less the time
// the request has already spent in the gateway (the flow-control queue), against the TTFT
// objective, and its predicted engine step at the batch the request would join against the TPOT
// objective. When no candidate is predicted to meet them, a sheddable request (priority below 0)
// is refused (framework.ErrSLOUnattainable: 429 slo_unattainable with the overflow marker, so a
// router may try another cluster) rather than served late, and any other request keeps the one
// candidate predicted to come nearest (the least of predicted/objective over the two). A request
// without objectives passes through untouched.
package slofilter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "slo-filter"

func init() { framework.Register(Type, Factory) }

// Model predicts a request's latency on an endpoint: the predicted-ttft-scorer implements it. It
// must be safe for concurrent use.
type Model interface {
	// PredictLatency returns the predicted time to first token and time per output token of a
	// request of promptTokens (cachedTokens of them in the pod's prefix cache) sent to e now.
	PredictLatency(e framework.Endpoint, promptTokens, cachedTokens int) (ttft, tpot time.Duration)
}

// Params are the slo-filter's parameters.
type Params struct {
	// Headroom is the share of each objective kept in reserve for prediction error: a pod meets
	// an objective when its prediction is at most (1 - Headroom) times it. Default 0, in [0, 1).
	Headroom float64 `json:"headroom,omitempty"`
}

// Filter is the slo-filter. It is safe for concurrent use.
type Filter struct {
	name     string
	headroom float64
	model    Model
	log      *slog.Logger
}

var (
	_ framework.Refuser = (*Filter)(nil)
	_ framework.Binder  = (*Filter)(nil)
)

// Factory builds a Filter from Params; Bind gives it the profile's latency model.
func Factory(name string, params json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if !(p.Headroom >= 0 && p.Headroom < 1) {
		return nil, fmt.Errorf("headroom must be in [0, 1), got %g", p.Headroom)
	}
	var log *slog.Logger
	if h != nil {
		log = h.Logger()
	}
	return New(name, p.Headroom, nil, log), nil
}

// New returns a Filter that predicts with model (nil until Bind) and reserves headroom of each
// objective; log may be nil.
func New(name string, headroom float64, model Model, log *slog.Logger) *Filter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Filter{name: name, headroom: headroom, model: model, log: log}
}

// TypedName returns the plugin's type and name.
func (f *Filter) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: f.name}
}

// errNoModel fails a profile with an slo-filter and no latency model.
var errNoModel = errors.New("slofilter: the profile needs a predicted-ttft-scorer (weight 0 predicts without scoring)")

// Bind finds the profile's latency model among its scorers (the predicted-ttft-scorer, whose
// hooks learn the pods' speeds from the profile's responses).
func (f *Filter) Bind(p *framework.Profile) error {
	if f.model != nil {
		return nil
	}
	for _, ws := range p.Scorers {
		if m, ok := ws.Scorer.(Model); ok {
			f.model = m
			return nil
		}
	}
	return errNoModel
}

// Refusal returns framework.ErrSLOUnattainable for a sheddable request with objectives: the only
// request the filter leaves no candidate for.
func (f *Filter) Refusal(req *framework.Request) error {
	if req.Priority < 0 && !req.SLO.IsZero() {
		return framework.ErrSLOUnattainable
	}
	return nil
}

// Filter keeps the endpoints predicted to meet req's objectives (see the package comment). The
// result aliases eps.
func (f *Filter) Filter(
	ctx context.Context,
	cs *framework.CycleState,
	req *framework.Request,
	eps []framework.Endpoint,
) []framework.Endpoint {
	if req.SLO.IsZero() || f.model == nil || len(eps) == 0 {
		return eps
	}
	obj := f.objectives(req, cs.Now)
	match := framework.ReadPrefixMatch(cs) // set only if a producer ran before the filters
	kept, best, bestMiss := 0, framework.Endpoint(nil), 0.0
	for _, e := range eps {
		ttft, tpot := f.model.PredictLatency(e, req.PromptTokens, match.TokensFor(e))
		miss := obj.miss(ttft, tpot)
		if miss <= 1 {
			eps[kept] = e
			kept++
		} else if best == nil || miss < bestMiss {
			best, bestMiss = e, miss
		}
	}
	switch {
	case kept > 0:
		f.debug(ctx, req, "met", kept)
		return eps[:kept]
	case req.Priority < 0:
		f.debug(ctx, req, "refused", 0)
		return eps[:0]
	}
	f.debug(ctx, req, "best_effort", 1)
	eps[0] = best
	return eps[:1]
}

func (f *Filter) debug(ctx context.Context, req *framework.Request, outcome string, kept int) {
	if f.log.Enabled(ctx, slog.LevelDebug) {
		f.log.DebugContext(ctx, "slo filter", "request", req.ID, "ttft_slo", req.SLO.TTFT, "tpot_slo", req.SLO.TPOT,
			"priority", req.Priority, "outcome", outcome, "kept", kept)
	}
}

// objectives are one request's targets for this cycle, headroom taken off; a zero field is none.
type objectives struct {
	ttft, tpot float64 // seconds
	// late: the TTFT objective has already passed (the request waited longer in the gateway).
	late bool
}

// objectives returns req's targets at now: the TTFT objective less the time since the request
// arrived.
func (f *Filter) objectives(req *framework.Request, now time.Time) objectives {
	var o objectives
	scale := 1 - f.headroom
	if req.SLO.TTFT > 0 {
		left := req.SLO.TTFT
		if !req.Arrived.IsZero() && !now.IsZero() {
			left -= now.Sub(req.Arrived)
		}
		o.ttft, o.late = left.Seconds()*scale, left <= 0
	}
	if req.SLO.TPOT > 0 {
		o.tpot = req.SLO.TPOT.Seconds() * scale
	}
	return o
}

// miss is how far a prediction is from the objectives: the larger of predicted/objective over
// the objectives set (at most 1: predicted to meet them). Past a TTFT objective it grows with the
// predicted TTFT, so the nearest pod is still the soonest.
func (o objectives) miss(ttft, tpot time.Duration) float64 {
	m := 0.0
	switch {
	case o.late:
		m = 2 + ttft.Seconds() // beyond any ratio that meets; the soonest is nearest
	case o.ttft > 0:
		m = ttft.Seconds() / o.ttft
	}
	if o.tpot > 0 {
		m = max(m, tpot.Seconds()/o.tpot)
	}
	return m
}
