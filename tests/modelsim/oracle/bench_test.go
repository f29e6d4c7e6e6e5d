package oracle_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// BenchmarkOracleMixedFleet times one replay of 10 s of mixed-fleet arrivals at the benchmarks'
// rate (47.56 req/s: 0.7 of the measured capacity of 4 × h100 + 4 × a10g) on that fleet, for the
// oracle and, as the reference measured in the same run, for round robin (no cloning).
func BenchmarkOracleMixedFleet(b *testing.B) {
	w, reqs := smallMixed(b, 47.56, 10*time.Second)
	fleet, err := oracle.ParseFleet("h100x4,a10gx4")
	if err != nil {
		b.Fatal(err)
	}
	for _, policy := range []string{"oracle", "round-robin"} {
		b.Run(policy, func(b *testing.B) {
			cfg := oracle.DefaultConfig()
			cfg.Profiles = fleet
			if policy == "round-robin" {
				cfg.Assign = func(i int) int { return i % len(fleet) }
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := oracle.Replay(context.Background(), cfg, w, reqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
		})
	}
}
