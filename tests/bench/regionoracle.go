package bench

import (
	"context"
	"fmt"
	"slices"
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
	var podRegion []string
	for _, r := range sc.Regions {
		for _, c := range r.Clusters {
			for _, p := range c.Pools {
				for range p.Count {
					cfg.Profiles = append(cfg.Profiles, p.Profile)
					podRegion = append(podRegion, r.Name)
				}
			}
		}
	}
	cfg.Network = func(r *workload.Request, pod int) (time.Duration, bool) {
		to := podRegion[pod]
		if to == r.Region {
			return 0, true
		}
		i := slices.IndexFunc(sc.Links, func(l Link) bool { return l.A == r.Region && l.B == to || l.A == to && l.B == r.Region })
		if i < 0 {
			return 0, false // no link: out of reach
		}
		return sc.Links[i].RTT, true
	}
	rep, err := oracle.Replay(ctx, cfg, sim, reqs)
	if err != nil {
		return nil, fmt.Errorf("bench: oracle: %w", err)
	}
	f := &OracleFigures{}
	var ttft []time.Duration
	for _, q := range rep.Requests {
		left := podRegion[q.Pod] != q.Region
		if q.Region == burst {
			f.BurstRequests++
			if left {
				f.BurstLeft++
			}
			ttft = append(ttft, time.Duration(float64(q.TTFT)*timeScale))
			continue
		}
		f.SteadyRequests++
		if left {
			f.SteadyLeft++
		}
	}
	slices.Sort(ttft)
	msOf := func(q float64) report.Num {
		return report.Num(float64(oracle.NearestRank(ttft, q)) / float64(time.Millisecond))
	}
	f.BurstTTFTMs = Percentiles{msOf(0.5), msOf(0.95), msOf(0.99)}
	return f, nil
}
