package engine

import (
	"math"
	"sort"
	"time"
)

// Histogram is a fixed-bucket histogram of durations in seconds (or, for IterationTokens, of counts), shaped like a
// Prometheus
// histogram (cumulative counts are computed when exported). Not safe for concurrent use.
type Histogram struct {
	// Bounds are the upper bounds of the buckets in seconds, ascending (+Inf is implicit).
	Bounds []float64
	// Counts[i] counts observations in (Bounds[i-1], Bounds[i]]; Counts[len(Bounds)] is +Inf.
	Counts []uint64
	// Sum is the sum of observations in seconds; Count their number.
	Sum   float64
	Count uint64
}

// vLLM's bucket bounds for time to first token and inter-token latency.
var (
	ttftBounds = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBounds = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	lagBounds = expBounds(50e-6, 2, 20)
	// requestBounds are vLLM's request_latency_buckets (e2e, queue, prefill, decode, inference).
	requestBounds = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// iterationTokenBounds are vLLM's buckets of vllm:iteration_tokens_total (tokens, not seconds).
	iterationTokenBounds = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

func expBounds(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start * math.Pow(factor, float64(i))
	}
	return b
}

func newHistogram(bounds []float64) Histogram {
	return Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

func (h *Histogram) observe(d time.Duration) { h.observeValue(d.Seconds()) }

func (h *Histogram) observeValue(v float64) {
	i := sort.SearchFloat64s(h.Bounds, v)
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

func (h *Histogram) clone() Histogram {
	c := *h
	c.Counts = append([]uint64(nil), h.Counts...)
	return c
}

// Quantile estimates the q-quantile (0..1) in seconds by linear interpolation inside the bucket
// that holds it. It returns 0 for an empty histogram and the largest bound for the +Inf bucket.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := q * float64(h.Count)
	var cum float64
	for i, c := range h.Counts {
		if cum+float64(c) < rank || c == 0 {
			cum += float64(c)
			continue
		}
		if i == len(h.Bounds) {
			return h.Bounds[len(h.Bounds)-1]
		}
		lo := 0.0
		if i > 0 {
			lo = h.Bounds[i-1]
		}
		return lo + (h.Bounds[i]-lo)*(rank-cum)/float64(c)
	}
	return h.Bounds[len(h.Bounds)-1]
}
