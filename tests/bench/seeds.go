package bench

import "fmt"

// Seeds for tuning and for reporting are disjoint by construction. Every figure the default
// profile was tuned against was measured with a workload's embedded seed (mixed-fleet 1, bursty
// 2, shared-prefix 3, multi-lora 4, uniform-steady 5, ...), and tuning runs, the sensitivity
// table's among them, only ever take seeds in [1, MaxTuningSeed]. The sweep's reported figures
// take seeds from ReportSeedBase up, which no tuning run uses, so a profile cannot have been
// fitted to the requests it is reported on.
const (
	// MaxTuningSeed is the largest seed a tuning run may take; tuning seed i is i (1-based).
	MaxTuningSeed = 1 << 20
	// ReportSeedBase is the first report seed: report seed i (0-based) is ReportSeedBase + i.
	ReportSeedBase = 1 << 32
	// MaxSeeds bounds how many seeds of either kind one sweep takes.
	MaxSeeds = 1000
)

// ReportSeeds returns the first n report seeds.
func ReportSeeds(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = ReportSeedBase + uint64(i)
	}
	return out
}

// TuningSeeds returns the first n tuning seeds: 1, 2, ..., n.
func TuningSeeds(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i) + 1
	}
	return out
}

// IsTuningSeed reports whether seed is one a tuning run may take.
func IsTuningSeed(seed uint64) bool { return seed >= 1 && seed <= MaxTuningSeed }

// IsReportSeed reports whether seed is one the sweep reports on.
func IsReportSeed(seed uint64) bool { return seed >= ReportSeedBase && seed < ReportSeedBase+MaxSeeds }

// checkSeedCount validates a --seeds style count.
func checkSeedCount(name string, n int) error {
	if n < 1 || n > MaxSeeds {
		return fmt.Errorf("bench: %s: must be in [1, %d], got %d", name, MaxSeeds, n)
	}
	return nil
}
