package gossip

import (
	"fmt"
	"math"
	"math/bits"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Precision says how finely Publish rounds the figures that move all the time, so that a pod state
// that has not really changed does not make a new delta every time the gateway publishes. Rounding
// is to the nearest step, so a figure is off by at most half a step. Zero fields keep figures
// exact; DefaultPrecision is what the default configurations use.
type Precision struct {
	// FreeKVSteps divides each model's total KV tokens into this many steps; free KV tokens are
	// rounded to the nearest step (never above the total). 0 keeps them exact.
	FreeKVSteps uint32
	// FloatBits is how many significant bits the predicted TTFTs (best and mean) and the prefill
	// and decode rates keep (1..24; float32 has 24). 0 keeps them exact.
	FloatBits int
	// CountBits is how many significant bits queue depths and running counts (of models and
	// adapters) keep: counts below 2^CountBits are exact. 0 keeps them exact.
	CountBits int
}

// DefaultPrecision rounds free KV tokens to 1/128 of the total (within 0.4 % of the capacity:
// 12,500 tokens of 3.2 M), TTFT and rates to 6 significant bits (within 1.6 %), and counts to 5
// significant bits (exact up to 31, within 3.2 % above). All are finer than the changes the
// gateway's publisher treats as significant (free KV 5 % of the total, queue 2, TTFT 25 %).
func DefaultPrecision() Precision {
	return Precision{FreeKVSteps: 128, FloatBits: 6, CountBits: 5}
}

func (p Precision) validate() error {
	if p.FloatBits < 0 || p.FloatBits > 24 || p.CountBits < 0 || p.CountBits > 32 {
		return fmt.Errorf(
			"gossip: Precision.FloatBits %d (want 0..24) or CountBits %d (want 0..32) out of range",
			p.FloatBits,
			p.CountBits,
		)
	}
	return nil
}

// apply rounds s's figures in place.
func (p Precision) apply(s *gossipv1.CapacitySummary) {
	for _, m := range s.GetModels() {
		m.FreeKvTokens = roundFreeKV(m.GetFreeKvTokens(), m.GetTotalKvTokens(), p.FreeKVSteps)
		m.QueueDepth = roundCount(m.GetQueueDepth(), p.CountBits)
		m.Running = roundCount(m.GetRunning(), p.CountBits)
		m.PredictedTtftMs = roundFloat(m.GetPredictedTtftMs(), p.FloatBits)
		m.MeanPredictedTtftMs = roundFloat(m.GetMeanPredictedTtftMs(), p.FloatBits)
		m.PrefillTokensPerSecond = roundFloat(m.GetPrefillTokensPerSecond(), p.FloatBits)
		m.DecodeTokensPerSecond = roundFloat(m.GetDecodeTokensPerSecond(), p.FloatBits)
		for _, a := range m.GetAdapters() {
			a.QueueDepth = roundCount(a.GetQueueDepth(), p.CountBits)
			a.Running = roundCount(a.GetRunning(), p.CountBits)
		}
	}
}

// roundFreeKV rounds free to the nearest multiple of total/steps, at most max(total, free).
func roundFreeKV(free, total uint64, steps uint32) uint64 {
	if steps == 0 || total == 0 {
		return free
	}
	step := max(total/uint64(steps), 1)
	if free > math.MaxUint64-step {
		return free
	}
	return min((free+step/2)/step*step, max(total, free))
}

// roundCount keeps the sigBits most significant bits of v, rounding to nearest.
func roundCount(v uint32, sigBits int) uint32 {
	if sigBits <= 0 || bits.Len32(v) <= sigBits {
		return v
	}
	drop := bits.Len32(v) - sigBits
	r := (uint64(v) + 1<<(drop-1)) >> drop << drop
	return uint32(min(r, math.MaxUint32>>drop<<drop))
}

// roundFloat keeps the sigBits most significant bits of f's mantissa, rounding to nearest.
// NaN, infinities and zero are returned unchanged.
func roundFloat(f float32, sigBits int) float32 {
	if sigBits <= 0 || sigBits >= 24 || f == 0 || math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return f
	}
	drop := uint(24 - sigBits)
	u := math.Float32bits(f)
	u += 1 << (drop - 1)
	u &^= 1<<drop - 1
	return math.Float32frombits(u)
}
