package framework

import (
	"math/rand/v2"
)

// DefaultMaxNumOfEndpoints is how many endpoints a picker returns by default: the chosen one and
// two fallbacks for retries (GIE's pickers default to 1; set maxNumOfEndpoints: 1 to match).
const DefaultMaxNumOfEndpoints = 3

// PickerParams are the parameters every built-in picker takes (GIE's name).
type PickerParams struct {
	// MaxNumOfEndpoints is the number of endpoints returned: target plus fallbacks. Default 3.
	MaxNumOfEndpoints int `json:"maxNumOfEndpoints,omitempty"`
}

// ParsePickerParams decodes PickerParams strictly and applies the default.
func ParsePickerParams(raw []byte) (int, error) {
	p := PickerParams{MaxNumOfEndpoints: DefaultMaxNumOfEndpoints}
	if err := DecodeParams(raw, &p); err != nil {
		return 0, err
	}
	if p.MaxNumOfEndpoints <= 0 {
		p.MaxNumOfEndpoints = DefaultMaxNumOfEndpoints
	}
	return p.MaxNumOfEndpoints, nil
}

// tieEpsilon is the score difference under which two endpoints count as tied.
const tieEpsilon = 1e-9

// SelectTop moves the k highest-scoring endpoints to the front of eps in descending order, breaking
// ties uniformly at random, and returns them as a Result. It costs O(len(eps)·k).
func SelectTop(eps []ScoredEndpoint, k int) *Result {
	k = min(k, len(eps))
	res := NewResult(k)
	for j := 0; j < k; j++ {
		best, ties := j, 1
		for i := j + 1; i < len(eps); i++ {
			d := eps[i].Score - eps[best].Score
			switch {
			case d > tieEpsilon:
				best, ties = i, 1
			case d >= -tieEpsilon:
				ties++
				if rand.IntN(ties) == 0 {
					best = i
				}
			}
		}
		eps[j], eps[best] = eps[best], eps[j]
		res.Targets = append(res.Targets, eps[j].Endpoint)
	}
	return res
}

// SelectBest moves the k best endpoints of eps to its front, best first, and returns them as a
// Result: better(a, b) reports whether a ranks above b. Ties keep the order of eps, so the choice
// is deterministic (the stateful baseline pickers rely on it); the relative order of the rest is
// kept too. It costs O(len(eps)·k).
func SelectBest(eps []ScoredEndpoint, k int, better func(a, b *ScoredEndpoint) bool) *Result {
	k = min(k, len(eps))
	res := NewResult(k)
	for j := 0; j < k; j++ {
		best := j
		for i := j + 1; i < len(eps); i++ {
			if better(&eps[i], &eps[best]) {
				best = i
			}
		}
		chosen := eps[best]
		copy(eps[j+1:best+1], eps[j:best])
		eps[j] = chosen
		res.Targets = append(res.Targets, chosen.Endpoint)
	}
	return res
}
