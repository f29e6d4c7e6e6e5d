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

// regionalOracle replays sim (the workload in simulated time, the run's sequence) in the oracle.
func regionalOracle(ctx context.Context, sc Scenario, sim *workload.Workload, burst string, timeScale float64) (*OracleFigures, error) {
	reqs, err := workload.Generate(sim, sim.Seed)
	if err != nil {
		return nil, err
	}
	cfg := oracle.DefaultConfig()
	g := oracle.Regions{RTT: sc.RTT}
	for _, r := range sc.Regions {
		for _, c := range r.Clusters {
			for _, p := range c.Pools {
				for range p.Count {
					cfg.Profiles = append(cfg.Profiles, p.Profile)
					g.PodRegion = append(g.PodRegion, r.Name)
				}
			}
		}
	}
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
