package bench

import (
	"encoding/json"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

// ConfidenceLevel is the two-sided coverage of every interval the sweep reports.
const ConfidenceLevel = 0.95

// Estimate is the mean of one figure over independent runs (seeds) with its Student t
// confidence interval: Mean ± HalfWidth covers the true mean with ConfidenceLevel, assuming the
// runs' figures are independent draws from a roughly normal distribution.
type Estimate struct {
	// Mean is the sample mean; +Inf when any run's figure is infinite (failures reached the
	// percentile), NaN without runs.
	Mean float64
	// HalfWidth is t(ConfidenceLevel, N−1) × s / √N; NaN with fewer than two runs or an infinite
	// run, 0 when every run agrees.
	HalfWidth float64
	// StdDev is the sample standard deviation s (N−1 in the denominator).
	StdDev float64
	// N is the number of runs.
	N int
}

// Lo and Hi are the interval's bounds.
func (e Estimate) Lo() float64 { return e.Mean - e.HalfWidth }

// Hi is the interval's upper bound.
func (e Estimate) Hi() float64 { return e.Mean + e.HalfWidth }

// HasCI reports whether the interval is defined (two or more finite runs).
func (e Estimate) HasCI() bool { return !math.IsNaN(e.HalfWidth) && !math.IsInf(e.Mean, 0) }

// MeanCI estimates the mean of xs with a two-sided ConfidenceLevel Student t interval.
func MeanCI(xs []float64) Estimate {
	e := Estimate{N: len(xs), Mean: math.NaN(), HalfWidth: math.NaN(), StdDev: math.NaN()}
	if len(xs) == 0 {
		return e
	}
	var sum float64
	for _, x := range xs {
		if math.IsInf(x, 1) {
			e.Mean = math.Inf(1)
			return e
		}
		sum += x
	}
	e.Mean = sum / float64(len(xs))
	if len(xs) < 2 {
		return e
	}
	var ss float64
	for _, x := range xs {
		ss += (x - e.Mean) * (x - e.Mean)
	}
	e.StdDev = math.Sqrt(ss / float64(len(xs)-1))
	e.HalfWidth = TQuantile(len(xs)-1) * e.StdDev / math.Sqrt(float64(len(xs)))
	return e
}

// TQuantile returns the Student t quantile with df degrees of freedom that bounds a two-sided
// ConfidenceLevel interval: t(1 − (1−level)/2, df), e.g. 12.706 for df 1 and 2.776 for df 4.
func TQuantile(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	return t.Quantile(1 - (1-ConfidenceLevel)/2)
}

// estimateJSON is Estimate's JSON form: non-finite numbers as "inf" or null.
type estimateJSON struct {
	Mean      report.Num `json:"mean"`
	HalfWidth report.Num `json:"ci95_half_width"`
	StdDev    report.Num `json:"stddev"`
	N         int        `json:"n"`
}

// MarshalJSON writes the estimate with "inf" for an infinite mean and null for undefined figures.
func (e Estimate) MarshalJSON() ([]byte, error) {
	return json.Marshal(estimateJSON{report.Num(e.Mean), report.Num(e.HalfWidth), report.Num(e.StdDev), e.N})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Estimate) UnmarshalJSON(b []byte) error {
	var j estimateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Estimate{float64(j.Mean), float64(j.HalfWidth), float64(j.StdDev), j.N}
	return nil
}
