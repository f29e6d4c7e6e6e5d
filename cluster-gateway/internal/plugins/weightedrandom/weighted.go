// Package weightedrandom provides the weighted-random-picker plugin (GIE's name): endpoints are
// sampled without replacement with probability proportional to their score (A-Res: key
// u^(1/score), highest keys win). Endpoints scoring 0 come last in random order; when every score
// is 0 the choice is uniform.
package weightedrandom

import (
	"math"
	"math/rand/v2"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "weighted-random-picker"

func init() { framework.Register(Type, Factory) }

// Factory builds the picker; its one parameter is maxNumOfEndpoints.
var Factory = framework.PickerFactory(Type, Pick)

// Pick replaces each score by its A-Res key (log(u)/score, a monotone form of u^(1/score)) and
// returns the top k keys.
func Pick(eps []framework.ScoredEndpoint, k int) *framework.Result {
	for i := range eps {
		u := 1 - rand.Float64() // (0,1]
		if eps[i].Score > 0 {
			eps[i].Score = math.Log(u) / eps[i].Score
		} else {
			// Below every positive key, in random order among themselves.
			eps[i].Score = -math.MaxFloat64 / 2 * (1 + u)
		}
	}
	return framework.SelectTop(eps, k)
}
