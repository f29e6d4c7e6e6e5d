// Package leastconn provides the leastconn-picker plugin, the baseline behind the leastconn
// profile: HAProxy's "balance leastconn" on this gateway's own count of requests in flight to
// each pod (HAProxy's per-server connections), never on scraped metrics.
//
// Pods are ordered by (in_flight + 1) / weight, an idle pod ranking 0 whatever its weight (so
// under light load requests spread over every idle pod rather than all going to the heaviest),
// with framework.WeightParams giving each pod's weight from its capacity. The first in that
// order is chosen. Among pods of equal rank it is round robin: HAProxy keeps its servers in a
// tree sorted by that key and moves a server behind its equals every time it takes or releases a
// connection, so of equals the one whose load changed longest ago goes first; this picker does
// the same, a pod's load changing when it is picked and when its response ends. Fallbacks are
// the next in the order. Scores are ignored.
package leastconn

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "leastconn-picker"

func init() { framework.Register(Type, Factory) }

// Picker is HAProxy's weighted least-connections picker. It is safe for concurrent use.
type Picker struct {
	name string
	k    int

	mu      sync.Mutex
	pods    *framework.WeightedStates[uint64] // per endpoint: weight and when its load last changed
	scratch []rank                            // one decision's candidates
	seq     uint64                            // load changes so far
}

// rank is a candidate's place in the order.
type rank struct {
	key     float64 // (in_flight + 1) / weight; 0 when idle
	changed uint64  // when its load last changed (a unique sequence number)
}

func (r rank) before(o rank) bool {
	if r.key != o.key {
		return r.key < o.key
	}
	return r.changed < o.changed
}

var (
	_ framework.Picker       = (*Picker)(nil)
	_ framework.PostResponse = (*Picker)(nil)
)

// Factory builds a Picker from framework.WeightedPickerParams; with a Handle it drops the state
// of endpoints that leave the set.
func Factory(name string, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	return framework.WeightedPickerFactory(name, raw, h, New, (*Picker).retain)
}

// New returns a picker with parameters p (defaults applied); log receives the warnings about
// unusable weight labels and may be nil.
func New(name string, p framework.WeightedPickerParams, log *slog.Logger) (*Picker, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, err
	}
	return &Picker{name: name, k: p.MaxNumOfEndpoints, pods: framework.NewWeightedStates[uint64](p.WeightParams, log)}, nil
}

// TypedName returns the plugin's type and name.
func (p *Picker) TypedName() framework.TypedName {
	return framework.TypedName{Type: Type, Name: p.name}
}

// Pick returns the k first candidates in the order and moves the chosen one behind its equals.
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
	ranks := p.scratch[:0]
	for i := range eps {
		st := p.entry(eps[i].Endpoint)
		r := rank{changed: st.State}
		if n := eps[i].Endpoint.InFlight(); n > 0 {
			r.key = float64(n+1) / st.Weight
		}
		ranks = append(ranks, r)
	}
	p.scratch = ranks
	for j := 0; j < k; j++ {
		best := j
		for i := j + 1; i < len(ranks); i++ {
			if ranks[i].before(ranks[best]) {
				best = i
			}
		}
		eps[j], eps[best] = eps[best], eps[j]
		ranks[j], ranks[best] = ranks[best], ranks[j]
		res.Targets = append(res.Targets, eps[j].Endpoint)
	}
	p.touch(res.Targets[0])
	return res
}

// PostResponse moves the pod that answered behind its equals: its load changed. A pod the
// picker holds no state for (it left the set meanwhile) is not added back.
func (p *Picker) PostResponse(_ context.Context, _ *framework.Request, info *framework.ResponseInfo) {
	if info == nil || info.Endpoint == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.pods.Lookup(info.Endpoint); st != nil {
		p.seq++
		st.State = p.seq
	}
}

// entry returns e's entry; an endpoint seen for the first time takes its place after those
// already known (in candidate order among the new ones, as HAProxy queues its servers in
// configuration order).
func (p *Picker) entry(e framework.Endpoint) *framework.Weighted[uint64] {
	st := p.pods.Get(e)
	if st.State == 0 {
		p.seq++
		st.State = p.seq
	}
	return st
}

// touch records that e's load changed now.
func (p *Picker) touch(e framework.Endpoint) {
	p.seq++
	p.entry(e).State = p.seq
}

func (p *Picker) retain(eps []framework.Endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods.Retain(eps)
}
