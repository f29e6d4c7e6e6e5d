package main

import (
	"fmt"
	"math"
)

// Fit is a curve fitted to measured (N, y) points by least squares.
type Fit struct {
	// Kind is "power" (y = a·N^b, fitted in log-log), "log" (y = a + b·ln N) or "linear"
	// (y = a + b·N).
	Kind string  `json:"kind"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
	// Points is how many measured points the fit used; a fit of fewer than two is a constant.
	Points int `json:"points"`
}

// At evaluates the fit at n.
func (f Fit) At(n float64) float64 {
	switch f.Kind {
	case "power":
		return f.A * math.Pow(n, f.B)
	case "log":
		return f.A + f.B*math.Log(n)
	default:
		return f.A + f.B*n
	}
}

// String states the fit as a formula.
func (f Fit) String() string {
	switch f.Kind {
	case "power":
		return fmt.Sprintf("%.4g·N^%.3f", f.A, f.B)
	case "log":
		return fmt.Sprintf("%.4g + %.4g·ln N", f.A, f.B)
	default:
		return fmt.Sprintf("%.4g + %.4g·N", f.A, f.B)
	}
}

// fitCurve fits kind to the points whose y is positive (log fits need it) and finite.
func fitCurve(kind string, ns, ys []float64) Fit {
	var xs, vs []float64
	for i := range ns {
		y := ys[i]
		if math.IsNaN(y) || math.IsInf(y, 0) || (kind == "power" && y <= 0) {
			continue
		}
		x := ns[i]
		switch kind {
		case "power":
			x, y = math.Log(x), math.Log(y)
		case "log":
			x = math.Log(x)
		}
		xs, vs = append(xs, x), append(vs, y)
	}
	a, b := leastSquares(xs, vs)
	if kind == "power" {
		a = math.Exp(a)
	}
	return Fit{Kind: kind, A: a, B: b, Points: len(xs)}
}

// leastSquares returns intercept and slope of the line through (xs, ys); with one point, that
// point's y and slope 0; with none, zeros.
func leastSquares(xs, ys []float64) (float64, float64) {
	n := float64(len(xs))
	switch len(xs) {
	case 0:
		return 0, 0
	case 1:
		return ys[0], 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return sy / n, 0
	}
	b := (n*sxy - sx*sy) / den
	return (sy - b*sx) / n, b
}
