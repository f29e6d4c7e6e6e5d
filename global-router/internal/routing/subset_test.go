package routing_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// Quiet.Estimate is Estimate for a cluster this router has nothing in flight or waiting at, and
// a lower bound of it whatever this router has there.
func TestQuietEstimateBoundsEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20_000 {
		c := routing.Cluster{
			ReadyPods: rng.IntN(9), Queue: rng.IntN(5), SaturatedFraction: float64(rng.IntN(5)) / 4,
			BaseTTFT:            time.Duration(rng.IntN(3)) * time.Duration(rng.IntN(400)) * time.Millisecond,
			StepTime:            time.Duration(rng.IntN(40)) * time.Millisecond,
			PrefillTokensPerSec: float64(rng.IntN(3) * rng.IntN(40_000)),
			ServiceTime:         time.Duration(rng.IntN(2)) * time.Second,
			RTT:                 time.Duration(rng.IntN(90)) * time.Millisecond,
			SummaryAge:          time.Duration(rng.IntN(3)) * time.Duration(rng.IntN(1500)) * time.Millisecond,
			CachedPrefixTokens:  rng.IntN(2000),
		}
		c.MeanTTFT = c.BaseTTFT * time.Duration(1+rng.IntN(3))
		req := routing.Request{PromptTokens: rng.IntN(4000), AvgTokens: 600}
		uncached := max(req.PromptTokens-c.CachedPrefixTokens, 0)
		q := routing.QuietOf(&c)
		if got, want := q.Estimate(c.RTT, c.SummaryAge, uncached), routing.Estimate(&c, req); got != want {
			t.Fatalf("quiet %+v: Quiet.Estimate %v, Estimate %v", c, got, want)
		}
		busy := c
		busy.InFlight, busy.Waiting = rng.IntN(20), rng.IntN(20)
		busy.InFlightTokens, busy.WaitingTokens = int64(rng.IntN(50_000)), int64(rng.IntN(50_000))
		busy.InFlightAge = time.Duration(rng.IntN(1000)) * time.Millisecond
		if lo, est := q.Estimate(c.RTT, c.SummaryAge, uncached), routing.Estimate(&busy, req); lo > est {
			t.Fatalf("busy %+v: Quiet.Estimate %v above Estimate %v", busy, lo, est)
		}
	}
}
