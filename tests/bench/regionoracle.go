package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// OracleFigures are a Tier 2 run's request sequence replayed offline by the oracle
// (tests/modelsim/oracle) on the scenario's fleet, placed in its regions, with its round trips:
// every request sent to the pod anywhere whose first token reaches the client soonest, given the
// exact state of every pod; no scrapes, no gossip, no CPU starvation. Times are the simulated
// ones scaled to real time, so they compare with the measured modes'.
type OracleFigures struct {
	// BurstTTFTMs are the TTFT percentiles of the burst region's clients.
	BurstTTFTMs Percentiles `json:"burst_region_ttft_ms"`
	// BurstRequests, BurstLeft, SteadyRequests and SteadyLeft count as ModeFigures' do.
	BurstRequests int `json:"burst_region_requests"`
	BurstLeft     int `json:"burst_region_left"`
	// SteadyRequests counts the other regions' requests, SteadyLeft those the oracle served in
	// another region (it has no local preference: it takes any pod that answers sooner).
	SteadyRequests int `json:"steady_requests"`
	SteadyLeft     int `json:"steady_left"`
}

// regionalOracle replays reqs (the run's sequence, generated from sim, the workload in simulated
// time) in the oracle.
func regionalOracle(
	ctx context.Context,
	sc Scenario,
	sim *workload.Workload,
	reqs []workload.Request,
	burst string,
	timeScale float64,
) (*OracleFigures, error) {
	cfg := oracle.DefaultConfig()
	fp := scenarioPods(sc)
	cfg.Profiles = fp.profiles
	g := oracle.Regions{RTT: sc.RTT, PodRegion: fp.region}
	cfg.Network = g.Network(false)
	rep, err := oracle.Replay(ctx, cfg, sim, reqs)
	if err != nil {
		return nil, fmt.Errorf("bench: oracle: %w", err)
	}
	s := rep.RegionSummary(burst)
	msOf := func(d time.Duration) report.Num {
		return report.Num(float64(d) * timeScale / float64(time.Millisecond))
	}
	f := &OracleFigures{BurstTTFTMs: Percentiles{msOf(s.TTFT.P50), msOf(s.TTFT.P95), msOf(s.TTFT.P99)},
		BurstRequests: s.Requests, BurstLeft: g.Away(rep, burst), SteadyRequests: len(rep.Requests) - s.Requests}
	for _, r := range sc.Regions {
		if r.Name != burst {
			f.SteadyLeft += g.Away(rep, r.Name)
		}
	}
	return f, nil
}

// fleetPods is a Tier 2 scenario's pods in fleet order (regions, their clusters, their pools):
// each pod's profile, region and cluster (its index in that order).
type fleetPods struct {
	profiles, region []string
	cluster          []int
}

// scenarioPods lists sc's pods in fleet order, the order the oracle's replays and the stacks'
// fleets use.
func scenarioPods(sc Scenario) fleetPods {
	var fp fleetPods
	k := 0
	for _, r := range sc.Regions {
		for _, c := range r.Clusters {
			for _, p := range c.Pools {
				for range p.Count {
					fp.profiles = append(fp.profiles, p.Profile)
					fp.region = append(fp.region, r.Name)
					fp.cluster = append(fp.cluster, k)
				}
			}
			k++
		}
	}
	return fp
}
