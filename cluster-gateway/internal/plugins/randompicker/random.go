// Package randompicker provides the random-picker plugin (GIE's name): endpoints are chosen
// uniformly at random, ignoring scores; fallbacks are further distinct random endpoints.
package randompicker

import (
	"math/rand/v2"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "random-picker"

func init() { framework.Register(Type, Factory) }

// Factory builds the picker; its one parameter is maxNumOfEndpoints.
var Factory = framework.PickerFactory(Type, Pick)

// Pick returns up to k distinct random endpoints (a partial Fisher-Yates shuffle).
func Pick(eps []framework.ScoredEndpoint, k int) *framework.Result {
	return Shuffle(eps, k)
}

// Shuffle moves k uniformly chosen distinct endpoints to the front of eps and returns them.
func Shuffle(eps []framework.ScoredEndpoint, k int) *framework.Result {
	k = min(k, len(eps))
	res := framework.NewResult(k)
	for j := 0; j < k; j++ {
		i := j + rand.IntN(len(eps)-j)
		eps[j], eps[i] = eps[i], eps[j]
		res.Targets = append(res.Targets, eps[j].Endpoint)
	}
	return res
}
