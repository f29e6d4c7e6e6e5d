package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// topology places the fleet's pods in regions and knows the round trips between regions, for
// workloads whose clients are in several regions (Tier 2's region-burst).
type topology struct {
	// podRegion is each pod's region, in fleet order.
	podRegion []string
	// regions lists the regions in the order --regions names them.
	regions []string
	// rtt holds the round trip of each pair of different regions, both ways.
	rtt map[[2]string]time.Duration
}

// parseTopology reads --regions (REGION=PODS items over the fleet in order, e.g.
// "us-east-1=2,us-west-2=2") and --rtt (A/B=DURATION items, symmetric, e.g.
// "us-east-1/us-west-2=70ms"): every pair of different regions needs a round trip; within a
// region it is 0.
func parseTopology(regions, rtts string, pods int) (*topology, error) {
	t := &topology{rtt: map[[2]string]time.Duration{}}
	for item := range strings.SplitSeq(regions, ",") {
		name, count, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(count)
		if !ok || name == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("--regions: %q is not REGION=PODS with a positive pod count", item)
		}
		if slices.Contains(t.regions, name) {
			return nil, fmt.Errorf("--regions: region %s named twice", name)
		}
		t.regions = append(t.regions, name)
		for range n {
			t.podRegion = append(t.podRegion, name)
		}
	}
	if len(t.podRegion) != pods {
		return nil, fmt.Errorf("--regions places %d pods, the fleet has %d", len(t.podRegion), pods)
	}
	if rtts != "" {
		for item := range strings.SplitSeq(rtts, ",") {
			pair, dur, ok := strings.Cut(strings.TrimSpace(item), "=")
			a, b, okPair := strings.Cut(pair, "/")
			d, err := time.ParseDuration(dur)
			if !ok || !okPair || err != nil || d < 0 {
				return nil, fmt.Errorf("--rtt: %q is not REGION/REGION=DURATION with a duration >= 0", item)
			}
			for _, r := range []string{a, b} {
				if !slices.Contains(t.regions, r) {
					return nil, fmt.Errorf("--rtt: %q names region %s, which --regions does not", item, r)
				}
			}
			if a == b {
				return nil, fmt.Errorf("--rtt: %q pairs a region with itself (the round trip within a region is 0)", item)
			}
			t.rtt[[2]string{a, b}], t.rtt[[2]string{b, a}] = d, d
		}
	}
	for i, a := range t.regions {
		for _, b := range t.regions[i+1:] {
			if _, ok := t.rtt[[2]string{a, b}]; !ok {
				return nil, fmt.Errorf("--rtt: no round trip between %s and %s", a, b)
			}
		}
	}
	return t, nil
}

// check reports a request whose client region has no pods.
func (t *topology) check(reqs []workload.Request) error {
	for i := range reqs {
		if !slices.Contains(t.regions, reqs[i].Region) {
			return fmt.Errorf(
				"--regions: request %d comes from region %q, which has no pods (the workload's regions must all be placed)",
				reqs[i].Index,
				reqs[i].Region,
			)
		}
	}
	return nil
}

// oracleRegions returns the oracle's view of the topology.
func (t *topology) oracleRegions() oracle.Regions {
	return oracle.Regions{PodRegion: t.podRegion, RTT: func(a, b string) time.Duration { return t.rtt[[2]string{a, b}] }}
}

// roundRobin returns the round-robin baseline with regions: each region's requests take turns
// over that region's pods (what one Kubernetes Service per region gives).
func (t *topology) roundRobin(reqs []workload.Request) func(i int) int {
	local := map[string][]int{}
	for p, r := range t.podRegion {
		local[r] = append(local[r], p)
	}
	next := map[string]int{}
	assign := make([]int, len(reqs))
	for i := range reqs {
		r := reqs[i].Region
		assign[i] = local[r][next[r]%len(local[r])]
		next[r]++
	}
	return func(i int) int { return assign[i] }
}
