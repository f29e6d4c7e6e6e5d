package gossip

import (
	"math"
	"testing"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

func TestRoundCount(t *testing.T) {
	tests := []struct {
		v, bits, want uint32
	}{
		{0, 5, 0},
		{31, 5, 31},
		{32, 5, 32},
		{33, 5, 34}, // 33 → 34 (steps of 2 from 32): half rounds up
		{100, 5, 100},
		{101, 5, 100}, // steps of 4 from 64
		{102, 5, 104},
		{1000, 0, 1000},
		{math.MaxUint32, 5, math.MaxUint32 >> 27 << 27},
	}
	for _, tt := range tests {
		if got := roundCount(tt.v, int(tt.bits)); got != tt.want {
			t.Errorf("roundCount(%d, %d) = %d, want %d", tt.v, tt.bits, got, tt.want)
		}
	}
}

func TestRoundFloat(t *testing.T) {
	tests := []struct {
		f    float32
		bits int
		want float32
	}{
		{0, 6, 0},
		{85.5, 6, 86},   // 6 significant bits: steps of 2 between 64 and 128
		{84.9, 6, 84},   // nearest
		{9007, 6, 8960}, // steps of 256 between 8192 and 16384
		{1.0, 6, 1.0},
		{-85.5, 6, -86},
		{85.5, 0, 85.5},
		{float32(math.Inf(1)), 6, float32(math.Inf(1))},
	}
	for _, tt := range tests {
		if got := roundFloat(tt.f, tt.bits); got != tt.want {
			t.Errorf("roundFloat(%v, %d) = %v, want %v", tt.f, tt.bits, got, tt.want)
		}
	}
	if got := roundFloat(float32(math.NaN()), 6); !math.IsNaN(float64(got)) {
		t.Errorf("roundFloat(NaN) = %v", got)
	}
}

func TestRoundFreeKV(t *testing.T) {
	tests := []struct {
		free, total uint64
		steps       uint32
		want        uint64
	}{
		{1_000_000, 3_200_000, 128, 1_000_000}, // a multiple of 25,000
		{1_012_499, 3_200_000, 128, 1_000_000}, // nearest step below
		{1_012_500, 3_200_000, 128, 1_025_000}, // half rounds up
		{3_199_999, 3_200_000, 128, 3_200_000}, // never above the total
		{3_300_000, 3_200_000, 128, 3_300_000}, // inconsistent figures are kept
		{5, 0, 128, 5},                         // no total: exact
		{77, 100, 128, 77},                     // steps of one token
		{1_012_499, 3_200_000, 0, 1_012_499},   // exact
		{math.MaxUint64, math.MaxUint64, 128, math.MaxUint64},
	}
	for _, tt := range tests {
		if got := roundFreeKV(tt.free, tt.total, tt.steps); got != tt.want {
			t.Errorf("roundFreeKV(%d, %d, %d) = %d, want %d", tt.free, tt.total, tt.steps, got, tt.want)
		}
	}
}

// Figures that move within the precision publish the same rounded summary, so the delta against
// it carries no model.
func TestPrecisionAbsorbsNoise(t *testing.T) {
	p := DefaultPrecision()
	mk := func(free uint64, ttft, decode float32) *gossipv1.CapacitySummary {
		s := &gossipv1.CapacitySummary{Node: "gw", Models: []*gossipv1.ModelCapacity{{
			Name: "m", TotalKvTokens: 3_200_000, FreeKvTokens: free, QueueDepth: 3, Running: 40,
			PredictedTtftMs: ttft, MeanPredictedTtftMs: 2 * ttft, DecodeTokensPerSecond: decode,
		}}}
		p.apply(s)
		return s
	}
	base := mk(1_000_000, 85.1, 9000)
	base.Sequence = 1
	next := mk(1_004_000, 85.4, 9010)
	next.Sequence = 2
	d := diffSummary(base, next)
	if d == nil || len(d.GetModels()) != 0 {
		t.Errorf("noise below the precision made delta %v", d)
	}
	moved := mk(1_100_000, 85.1, 9000)
	moved.Sequence = 3
	if d := diffSummary(base, moved); d == nil || len(d.GetModels()) != 1 {
		t.Errorf("a real change made delta %v", d)
	}
	mean := mk(1_000_000, 85.1, 9000)
	mean.Sequence, mean.Models[0].MeanPredictedTtftMs = 4, 300
	p.apply(mean)
	if d := diffSummary(base, mean); d == nil || len(d.GetModels()) != 1 {
		t.Errorf("a change of the mean TTFT made delta %v", d)
	}
}
