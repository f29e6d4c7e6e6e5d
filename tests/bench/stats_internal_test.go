package bench

import (
	"encoding/json"
	"math"
	"testing"
)

// TestMeanCI checks the Student t interval against values computed by hand:
// half-width = t(0.975, n−1) × s / √n.
func TestMeanCI(t *testing.T) {
	tests := []struct {
		name           string
		xs             []float64
		mean, sd, half float64
	}{
		// mean 2, s = 1, t(0.975, 2) = 4.302653: 4.302653 / √3 = 2.484138.
		{"three", []float64{1, 2, 3}, 2, 1, 2.484138},
		// mean 15, s = √2 × 5 = 7.071068, t(0.975, 1) = 12.706205: 12.706205 × 7.071068 / √2 = 63.531024.
		{"two", []float64{10, 20}, 15, 7.071068, 63.531024},
		// mean 5, s² = (16+4+0+4+16)/4 = 10, s = 3.162278, t(0.975, 4) = 2.776445:
		// 2.776445 × 3.162278 / √5 = 3.926486.
		{"five", []float64{1, 3, 5, 7, 9}, 5, 3.162278, 3.926486},
		// every run agrees: a zero-width interval.
		{"constant", []float64{4, 4, 4, 4}, 4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MeanCI(tt.xs)
			if e.N != len(tt.xs) || !near(e.Mean, tt.mean) || !near(e.StdDev, tt.sd) || !near(e.HalfWidth, tt.half) ||
				!e.HasCI() {
				t.Errorf("MeanCI(%v) = %+v, want mean %v sd %v half-width %v", tt.xs, e, tt.mean, tt.sd, tt.half)
			}
			if !near(e.Lo(), tt.mean-tt.half) || !near(e.Hi(), tt.mean+tt.half) {
				t.Errorf("bounds [%v, %v]", e.Lo(), e.Hi())
			}
		})
	}
}

// TestMeanCIUndefined: no runs, one run and an infinite run have no interval.
func TestMeanCIUndefined(t *testing.T) {
	if e := MeanCI(nil); !math.IsNaN(e.Mean) || e.HasCI() {
		t.Errorf("no runs: %+v", e)
	}
	if e := MeanCI([]float64{7}); e.Mean != 7 || e.HasCI() {
		t.Errorf("one run: %+v", e)
	}
	if e := MeanCI([]float64{1, math.Inf(1), 3}); !math.IsInf(e.Mean, 1) || e.HasCI() {
		t.Errorf("infinite run: %+v", e)
	}
}

// TestTQuantile checks the t quantiles against the printed table.
func TestTQuantile(t *testing.T) {
	for df, want := range map[int]float64{1: 12.706205, 2: 4.302653, 4: 2.776445, 9: 2.262157, 30: 2.042272, 1000: 1.962339} {
		if got := TQuantile(df); !near(got, want) {
			t.Errorf("t(0.975, %d) = %v, want %v", df, got, want)
		}
	}
	if !math.IsNaN(TQuantile(0)) {
		t.Error("df 0 has no quantile")
	}
}

// TestEstimateJSON: estimates round-trip with "inf" and null for non-finite figures.
func TestEstimateJSON(t *testing.T) {
	for _, e := range []Estimate{MeanCI([]float64{1, 2, 3}), MeanCI([]float64{math.Inf(1), 2}), MeanCI(nil)} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got Estimate
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if !sameFloat(got.Mean, e.Mean) || !sameFloat(got.HalfWidth, e.HalfWidth) || got.N != e.N {
			t.Errorf("%s: got %+v, want %+v", b, got, e)
		}
	}
}

// TestCompare: a tie is an overlap of the intervals; infinity loses to any finite figure.
func TestCompare(t *testing.T) {
	low, high, wide := MeanCI([]float64{10, 11, 12}), MeanCI([]float64{100, 101, 102}), MeanCI([]float64{5, 200})
	inf := MeanCI([]float64{math.Inf(1), 1})
	tests := []struct {
		name string
		a, b Estimate
		want Comparison
	}{
		{"disjoint below", low, high, Wins},
		{"disjoint above", high, low, Loses},
		{"overlap", low, wide, Ties},
		{"infinite loses", inf, high, Loses},
		{"finite beats infinite", low, inf, Wins},
		{"both infinite", inf, inf, Ties},
		{"one seed: means", MeanCI([]float64{3}), MeanCI([]float64{4}), Wins},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compare(tt.a, tt.b); got != tt.want {
				t.Errorf("compare = %v, want %v", got, tt.want)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(1, math.Abs(b)) }

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
