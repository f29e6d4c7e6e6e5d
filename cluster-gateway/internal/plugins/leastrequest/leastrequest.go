// Package leastrequest provides the least-request-picker plugin, the baseline behind the
// least-request profile: the endpoint with the fewest requests in flight from this gateway wins
// (ties at random), scores are ignored. Like Envoy's LEAST_REQUEST it uses only the gateway's own
// counts, never scraped metrics.
package leastrequest

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "least-request-picker"

func init() { framework.Register(Type, Factory) }

// Factory builds the picker; its one parameter is maxNumOfEndpoints.
var Factory = framework.PickerFactory(Type, Pick)

// Pick returns the k endpoints with the fewest in-flight requests, fewest first.
func Pick(eps []framework.ScoredEndpoint, k int) *framework.Result {
	for i := range eps {
		eps[i].Score = -float64(eps[i].Endpoint.InFlight())
	}
	return framework.SelectTop(eps, k)
}
