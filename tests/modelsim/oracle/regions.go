package oracle

import (
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Regions places a fleet's pods in regions, for workloads whose clients are in several regions.
type Regions struct {
	// PodRegion is each pod's region, in fleet order.
	PodRegion []string
	// RTT returns the round trip between two different regions.
	RTT func(a, b string) time.Duration
}

// Network returns a Config.Network: a request may go to any pod (with localOnly, only to its own
// region's), at the round trip between its client's region and the pod's.
func (g Regions) Network(localOnly bool) func(r *workload.Request, pod int) (time.Duration, bool) {
	return func(r *workload.Request, pod int) (time.Duration, bool) {
		switch to := g.PodRegion[pod]; {
		case to == r.Region:
			return 0, true
		case localOnly:
			return 0, false
		default:
			return g.RTT(r.Region, to), true
		}
	}
}

// Away returns how many of region's requests in rep were served by a pod of another region.
func (g Regions) Away(rep *Report, region string) int {
	n := 0
	for _, q := range rep.Requests {
		if q.Region == region && g.PodRegion[q.Pod] != region {
			n++
		}
	}
	return n
}
