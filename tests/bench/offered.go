package bench

import (
	"fmt"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// maxLoad bounds Config.Load: past twice the fleet's capacity every policy only measures how
// fast a queue grows.
const maxLoad = 2.0

// peakFactor is how much faster than its mean w's busiest phase arrives: an on/off workload's
// burst factor (its bursts run at that multiple of the mean rate), 1 for steady arrivals.
func peakFactor(w *workload.Workload) float64 {
	if a := w.Arrival; a != nil && a.Process == workload.OnOff && a.BurstFactor > 1 {
		return a.BurstFactor
	}
	return 1
}

// OfferedLoad is w's offered load as a fraction of the fleet capacity: the rate of its busiest
// phase, Load × the peak factor (bursty's load 0.225 with 4× bursts offers 0.9 in a burst).
func OfferedLoad(w *workload.Workload) float64 { return w.Load * peakFactor(w) }

// withOfferedLoad returns a copy of w whose busiest phase runs at load × the fleet capacity:
// its mean rate is load / peak factor of the capacity, its arrival shape unchanged.
func withOfferedLoad(w *workload.Workload, load float64) (*workload.Workload, error) {
	if w.IsTrace() || w.IsClosedLoop() {
		return nil, fmt.Errorf("bench: load: workload %s has no rate to set", w.Name)
	}
	if !(load > 0) || load > maxLoad {
		return nil, fmt.Errorf("bench: load: must be in (0, %g], got %v", maxLoad, load)
	}
	c := w.Clone()
	c.Load = load / peakFactor(w)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("bench: load %v: %w", load, err)
	}
	return c, nil
}
