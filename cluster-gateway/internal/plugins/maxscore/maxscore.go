// Package maxscore provides the max-score-picker plugin (GIE's name): the highest total score
// wins, ties broken at random; the next best follow as fallbacks.
package maxscore

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// Type is the registered plugin type.
const Type = "max-score-picker"

func init() { framework.Register(Type, Factory) }

// Factory builds the picker; its one parameter is maxNumOfEndpoints.
var Factory = framework.PickerFactory(Type, Pick)

// Pick returns up to k endpoints, best first.
func Pick(eps []framework.ScoredEndpoint, k int) *framework.Result {
	return framework.SelectTop(eps, k)
}
