// Package p2c provides the p2c-picker plugin, the baseline behind the p2c profile: Envoy's
// LEAST_REQUEST load balancer, on this gateway's own count of requests in flight to each pod
// (Envoy's per-host rq_active), never on scraped metrics.
//
// When every candidate has the same weight it is power of two choices: choiceCount (Envoy's
// choice_count, default 2) candidates are drawn uniformly at random, with replacement, and the
// one with the fewest requests in flight wins (on a tie, the first drawn). When the weights
// differ (framework.WeightParams: each pod's capacity) it is Envoy's weighted mode: an earliest
// deadline first schedule, as its weighted round robin, in which a pod picked is scheduled
// again 1/w later, w its weight at the time of the pick scaled by its load,
//
//	w = weight / (in_flight + 1)^activeRequestBias
//
// (Envoy's active_request_bias, default 1; 0 is plain weighted round robin). Envoy samples no
// pair in that mode, so a loaded pod is picked less and less often but never drained.
//
// Fallbacks are drawn the same way among the remaining candidates, as Envoy's retries exclude
// the hosts already tried.
package p2c

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "p2c-picker"

func init() { framework.Register(Type, Factory) }

// maxChoiceCount bounds choiceCount: each draw costs a pick a random number.
const maxChoiceCount = 100

// Params are the picker's parameters: framework.WeightedPickerParams and Envoy's two.
type Params struct {
	framework.WeightedPickerParams
	// ChoiceCount is how many random candidates are compared when the weights are equal.
	// Default 2.
	ChoiceCount int `json:"choiceCount,omitempty"`
	// ActiveRequestBias is how strongly requests in flight lower a pod's weight when the
	// weights differ (>= 0). Default 1.
	ActiveRequestBias *float64 `json:"activeRequestBias,omitempty"`
}

// Picker is Envoy's least-request picker. It is safe for concurrent use.
type Picker struct {
	name   string
	k      int
	choice int
	bias   float64

	mu      sync.Mutex
	intN    func(n int) int // uniform in [0, n); the global source unless seeded
	pods    *framework.WeightedStates[slot]
	scratch []*framework.Weighted[slot] // one decision's candidates' entries
	clock   float64                     // the EDF schedule's time: the deadline of the last pick
	seq     uint64                      // EDF insertion order, breaking deadline ties as Envoy's scheduler does
}

// slot is a pod's place in the weighted (EDF) schedule.
type slot struct {
	deadline float64
	order    uint64
	queued   bool // deadline is set
}

var _ framework.Picker = (*Picker)(nil)

// Factory builds a Picker from Params; with a Handle it drops the state of endpoints that leave
// the set.
func Factory(name string, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var p Params
	if err := framework.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	var log *slog.Logger
	if h != nil {
		log = h.Logger()
	}
	pk, err := New(name, p, nil, log)
	if err != nil {
		return nil, err
	}
	if h != nil {
		h.OnRemove(func(string) { pk.retain(h.Endpoints()) })
	}
	return pk, nil
}

// New returns a picker with parameters p (defaults applied). intN, when not nil, is the picker's
// only source of randomness, a uniform draw in [0, n) (tests pass a seeded rand.Rand's IntN);
// nil uses the global source. The picker calls it under its lock. log receives the warnings
// about unusable weight labels and may be nil.
func New(name string, p Params, intN func(n int) int, log *slog.Logger) (*Picker, error) {
	wp, err := p.Normalize()
	if err != nil {
		return nil, err
	}
	if p.ChoiceCount == 0 {
		p.ChoiceCount = 2
	}
	bias := 1.0
	if p.ActiveRequestBias != nil {
		bias = *p.ActiveRequestBias
	}
	switch {
	case p.ChoiceCount < 1 || p.ChoiceCount > maxChoiceCount:
		return nil, fmt.Errorf("parameters: choiceCount: %d is not in [1, %d]", p.ChoiceCount, maxChoiceCount)
	case math.IsNaN(bias) || bias < 0 || bias > 100:
		return nil, errors.New("parameters: activeRequestBias: must be in [0, 100]")
	}
	pk := &Picker{name: name, k: wp.MaxNumOfEndpoints, choice: p.ChoiceCount, bias: bias, intN: rand.IntN,
		pods: framework.NewWeightedStates[slot](wp.WeightParams, log)}
	if intN != nil {
		pk.intN = intN
	}
	return pk, nil
}

// TypedName returns the plugin's type and name.
func (p *Picker) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: p.name}
}

// Pick chooses by power of two choices when the candidates' weights are equal, by the
// load-scaled weighted schedule otherwise.
func (p *Picker) Pick(
	_ context.Context,
	_ *framework.CycleState,
	_ *framework.Request,
	eps []framework.ScoredEndpoint,
) *framework.Result {
	k := min(p.k, len(eps))
	res := framework.NewResult(k)
	if len(eps) == 0 {
		return res
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sts, equal := p.states(eps)
	defer clear(sts)
	if equal {
		return p.choices(eps, k, res)
	}
	return p.schedule(eps, sts, k, res)
}

// states returns the candidates' entries (in p.scratch, aligned with eps) and whether their
// weights are all equal.
func (p *Picker) states(eps []framework.ScoredEndpoint) ([]*framework.Weighted[slot], bool) {
	sts := p.scratch[:0]
	equal := true
	for i := range eps {
		sts = append(sts, p.pods.Get(eps[i].Endpoint))
		equal = equal && sts[i].Weight == sts[0].Weight
	}
	p.scratch = sts
	return sts, equal
}

// choices fills res with k endpoints, each the least loaded of choiceCount draws (with
// replacement) among the candidates not taken yet, which it moves to the front of eps.
func (p *Picker) choices(eps []framework.ScoredEndpoint, k int, res *framework.Result) *framework.Result {
	for j := 0; j < k; j++ {
		rest := len(eps) - j
		best := j + p.intN(rest)
		for range p.choice - 1 {
			if i := j + p.intN(rest); eps[i].Endpoint.InFlight() < eps[best].Endpoint.InFlight() {
				best = i
			}
		}
		eps[j], eps[best] = eps[best], eps[j]
		res.Targets = append(res.Targets, eps[j].Endpoint)
	}
	return res
}

// schedule fills res from the weighted schedule: the candidate with the earliest deadline (on a
// tie, the earliest scheduled) is chosen and scheduled again 1/w after it, w its weight scaled by
// its load now; the fallbacks are the next earliest. A candidate not in the schedule yet (new, or
// back after being left out of the candidates, so behind the schedule's time) joins it 1/w from
// now.
func (p *Picker) schedule(
	eps []framework.ScoredEndpoint,
	sts []*framework.Weighted[slot],
	k int,
	res *framework.Result,
) *framework.Result {
	for i, st := range sts {
		if !st.State.queued || st.State.deadline < p.clock {
			p.enqueue(st, eps[i].Endpoint, p.clock)
		}
	}
	for j := 0; j < k; j++ {
		best := j
		for i := j + 1; i < len(sts); i++ {
			if sts[i].State.before(sts[best].State) {
				best = i
			}
		}
		eps[j], eps[best] = eps[best], eps[j]
		sts[j], sts[best] = sts[best], sts[j]
		res.Targets = append(res.Targets, eps[j].Endpoint)
	}
	p.clock = sts[0].State.deadline
	p.enqueue(sts[0], res.Targets[0], p.clock)
	return res
}

// before reports whether s comes before o in the schedule (orders are unique: no ties).
func (s slot) before(o slot) bool {
	if s.deadline != o.deadline {
		return s.deadline < o.deadline
	}
	return s.order < o.order
}

// enqueue schedules e at 1/w after from.
func (p *Picker) enqueue(st *framework.Weighted[slot], e framework.Endpoint, from float64) {
	p.seq++
	st.State = slot{deadline: from + 1/p.effectiveWeight(st.Weight, e.InFlight()), order: p.seq, queued: true}
}

// effectiveWeight is Envoy's weight / (active_requests + 1)^active_request_bias.
func (p *Picker) effectiveWeight(weight float64, inFlight int64) float64 {
	switch active := float64(max(inFlight, 0)) + 1; p.bias {
	case 0:
		return weight
	case 1:
		return weight / active
	default:
		return weight / math.Pow(active, p.bias)
	}
}

func (p *Picker) retain(eps []framework.Endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods.Retain(eps)
}
