package bench

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestScaleTime checks that a time scale keeps the workload the same in simulated time: rates
// divided, durations and burst timing multiplied.
func TestScaleTime(t *testing.T) {
	w, err := workload.Load("bursty")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ts   float64
	}{{"real time", 1}, {"half speed", 2}, {"quarter speed", 4}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rate := w.Arrival.Rate
			got, err := scaleTime(w, tt.ts)
			if err != nil {
				t.Fatal(err)
			}
			a := got.Arrival
			if a.Rate != w.Arrival.Rate/tt.ts || a.BurstLength != time.Duration(tt.ts*float64(w.Arrival.BurstLength)) ||
				a.Period != time.Duration(
					tt.ts*float64(w.Arrival.Period),
				) || got.Duration != time.Duration(tt.ts*float64(w.Duration)) {
				t.Errorf(
					"scaled by %v: rate %v burst %v period %v duration %v",
					tt.ts,
					a.Rate,
					a.BurstLength,
					a.Period,
					got.Duration,
				)
			}
			if w.Arrival.Rate != rate {
				t.Error("the original workload was changed")
			}
		})
	}
}

// TestScaleTimeRegions checks that every region's arrivals are scaled too, and the original kept.
func TestScaleTimeRegions(t *testing.T) {
	w, err := workload.Load("region-burst")
	if err != nil {
		t.Fatal(err)
	}
	got, err := scaleTime(w, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got.Regions {
		orig := w.Regions[i].Arrival
		if r.Arrival.Rate != orig.Rate/2 || r.Arrival.Period != 2*orig.Period || r.Arrival.BurstLength != 2*orig.BurstLength {
			t.Errorf("%s: scaled arrival %+v from %+v", r.Name, r.Arrival, orig)
		}
	}
	if got.MeanRate() != w.MeanRate()/2 {
		t.Errorf("mean rate %v, want %v", got.MeanRate(), w.MeanRate()/2)
	}
}
