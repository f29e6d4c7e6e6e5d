package framework

import (
	"context"
	"encoding/json"
)

// PickFunc orders scored endpoints and returns at most k of them, best first. It may reorder eps
// and overwrite their scores. It must be safe for concurrent use.
type PickFunc func(eps []ScoredEndpoint, k int) *Result

// PickerFactory returns the Factory of a stateless picker of type typ that picks with pick. Its
// one parameter is GIE's maxNumOfEndpoints (PickerParams).
func PickerFactory(typ string, pick PickFunc) Factory {
	return func(name string, params json.RawMessage, _ Handle) (Plugin, error) {
		k, err := ParsePickerParams(params)
		if err != nil {
			return nil, err
		}
		return &funcPicker{name: TypedName{Type: typ, Name: name}, k: k, pick: pick}, nil
	}
}

type funcPicker struct {
	name TypedName
	k    int
	pick PickFunc
}

var _ Picker = (*funcPicker)(nil)

func (p *funcPicker) TypedName() TypedName { return p.name }

func (p *funcPicker) Pick(_ context.Context, _ *CycleState, _ *Request, eps []ScoredEndpoint) *Result {
	return p.pick(eps, p.k)
}

// ScoreFunc writes scores[i] in [0,1] for eps[i] from the endpoints alone. It must be safe for
// concurrent use.
type ScoreFunc func(eps []Endpoint, scores []float64)

// ScorerFactory returns the Factory of a stateless scorer of type typ, without parameters, that
// scores with score.
func ScorerFactory(typ string, score ScoreFunc) Factory {
	return func(name string, params json.RawMessage, _ Handle) (Plugin, error) {
		if err := NoParams(params); err != nil {
			return nil, err
		}
		return &funcScorer{name: TypedName{Type: typ, Name: name}, score: score}, nil
	}
}

type funcScorer struct {
	name  TypedName
	score ScoreFunc
}

var _ Scorer = (*funcScorer)(nil)

func (s *funcScorer) TypedName() TypedName { return s.name }

func (s *funcScorer) Score(_ context.Context, _ *CycleState, _ *Request, eps []Endpoint, scores []float64) {
	s.score(eps, scores)
}

// MinMaxLowIsBetter scores eps by value(metrics), lowest 1, highest 0, linear between; all equal
// gives 1; endpoints without metrics score 0 and do not take part in the range. It is the
// normalisation of GIE's queue and running-requests scorers.
func MinMaxLowIsBetter(eps []Endpoint, scores []float64, value func(*Metrics) float64) {
	lo, hi, any := 0.0, 0.0, false
	for _, e := range eps {
		m := e.Metrics()
		if m == nil {
			continue
		}
		v := value(m)
		if !any || v < lo {
			lo = v
		}
		if !any || v > hi {
			hi = v
		}
		any = true
	}
	for i, e := range eps {
		m := e.Metrics()
		switch {
		case m == nil:
			scores[i] = 0
		case hi == lo:
			scores[i] = 1
		default:
			scores[i] = (hi - value(m)) / (hi - lo)
		}
	}
}
