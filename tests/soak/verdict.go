package soak

import (
	"fmt"
	"slices"
	"time"
)

// Point is one sample of a process's resource use.
type Point struct {
	// At is the time since the load started.
	At time.Duration
	// HeapBytes is go_memstats_heap_inuse_bytes; Goroutines is go_goroutines.
	HeapBytes, Goroutines float64
}

// Tolerance bounds the growth a resource may show between the first and the last third of the
// samples taken after warm-up: last ≤ first×(1+Ratio) + Slack.
type Tolerance struct {
	Ratio float64
	Slack float64
}

// Allows reports whether growth from first to last is within the tolerance.
func (t Tolerance) Allows(first, last float64) bool { return last <= first*(1+t.Ratio)+t.Slack }

// Judgement is the verdict on one resource of one process.
type Judgement struct {
	// First and Last are the medians of the first and last third of the samples after warm-up.
	First, Last float64
	// Samples is how many samples after warm-up the verdict rests on.
	Samples int
	// OK is true when the growth is within the tolerance.
	OK bool
}

// Growth is Last/First - 1 (0 when First is 0).
func (j Judgement) Growth() float64 {
	if j.First == 0 {
		return 0
	}
	return j.Last/j.First - 1
}

// minSamples is the fewest samples after warm-up a verdict needs (two in each third).
const minSamples = 6

// Judge compares the median of the first third of the samples taken at or after warmup with the
// median of the last third. It returns an error when there are too few samples to judge.
func Judge(points []Point, warmup time.Duration, value func(Point) float64, tol Tolerance) (Judgement, error) {
	var vals []float64
	for _, p := range points {
		if p.At >= warmup {
			vals = append(vals, value(p))
		}
	}
	if len(vals) < minSamples {
		return Judgement{
				Samples: len(vals),
			}, fmt.Errorf(
				"soak: %d samples after warm-up, need at least %d",
				len(vals),
				minSamples,
			)
	}
	third := len(vals) / 3
	j := Judgement{First: median(vals[:third]), Last: median(vals[len(vals)-third:]), Samples: len(vals)}
	j.OK = tol.Allows(j.First, j.Last)
	return j, nil
}

func median(vals []float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Heap and Goroutines select a Point's resource for Judge.
func Heap(p Point) float64       { return p.HeapBytes }
func Goroutines(p Point) float64 { return p.Goroutines }
