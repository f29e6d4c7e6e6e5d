package soak_test

import (
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/soak"
)

// series returns n samples one second apart with the value f(i).
func series(n int, f func(i int) float64) []soak.Point {
	out := make([]soak.Point, n)
	for i := range out {
		out[i] = soak.Point{At: time.Duration(i) * time.Second, HeapBytes: f(i), Goroutines: f(i)}
	}
	return out
}

func TestJudge(t *testing.T) {
	tol := soak.Tolerance{Ratio: 0.2, Slack: 10}
	tests := []struct {
		name   string
		points []soak.Point
		warmup time.Duration
		wantOK bool
		first  float64
		last   float64
	}{
		{"flat", series(30, func(int) float64 { return 100 }), 0, true, 100, 100},
		{"noisy but flat", series(30, func(i int) float64 { return 100 + float64(i%3)*10 }), 0, true, 110, 110},
		{"leak", series(30, func(i int) float64 { return 100 + float64(i)*5 }), 0, false, 122.5, 222.5},
		{"growth within tolerance", series(30, func(i int) float64 { return 100 + float64(i) }), 0, true, 104.5, 124.5},
		{
			"warm-up growth ignored",
			series(30, func(i int) float64 { return min(float64(i)*50, 500) }),
			10 * time.Second,
			true,
			500,
			500,
		},
		{"spike in the last third", series(30, func(i int) float64 {
			if i == 28 {
				return 10000
			}
			return 100
		}), 0, true, 100, 100},
		{"shrinking", series(30, func(i int) float64 { return 300 - float64(i)*5 }), 0, true, 277.5, 177.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := soak.Judge(tc.points, tc.warmup, soak.Heap, tol)
			if err != nil {
				t.Fatal(err)
			}
			if j.OK != tc.wantOK || j.First != tc.first || j.Last != tc.last {
				t.Errorf("Judge = %+v, want ok=%v first=%v last=%v", j, tc.wantOK, tc.first, tc.last)
			}
		})
	}
}

func TestJudgeTooFewSamples(t *testing.T) {
	points := series(20, func(int) float64 { return 1 })
	if _, err := soak.Judge(points, 16*time.Second, soak.Goroutines, soak.Tolerance{}); err == nil {
		t.Fatal("Judge with 4 samples after warm-up: no error")
	}
}
