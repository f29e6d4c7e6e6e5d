// Package report summarises a loadgen run: percentiles of time to first token, inter-token and
// end-to-end latency per target (failed requests count as infinitely slow), throughput, prefix-cache
// hit rate, errors, where requests were served, and ratios against a baseline target. It writes
// the summary as JSON (schema Schema), as a markdown table and as a TTFT CDF plot (PNG).
package report

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// Num is a figure that may be infinite (a failed request is infinitely slow) or undefined (a ratio
// of two infinities). In JSON +Inf is the string "inf", -Inf "-inf", and an undefined value null.
type Num float64

// Inf is the figure of a request that never answered.
var Inf = Num(math.Inf(1))

// MarshalJSON writes n as a number, "inf", "-inf" or null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Num) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "null":
		*n = Num(math.NaN())
		return nil
	case `"inf"`:
		*n = Inf
		return nil
	case `"-inf"`:
		*n = Num(math.Inf(-1))
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("report: number %s: %w", b, err)
	}
	*n = Num(f)
	return nil
}

// String formats n for tables: "∞" for infinity, "-" when undefined, else 3 significant digits or
// more.
func (n Num) String() string {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return "-"
	case math.IsInf(f, 1):
		return "∞"
	case math.IsInf(f, -1):
		return "-∞"
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case math.Abs(f) >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the nearest-rank method: the
// smallest value with at least p% of the values at or below it. It returns NaN for no values.
func Percentile(sorted []float64, p float64) Num {
	if len(sorted) == 0 || !(p > 0 && p <= 100) {
		return Num(math.NaN())
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return Num(sorted[min(max(rank, 1), len(sorted))-1])
}

// ratio is a/b with the conventions of infinitely slow failures: ∞/∞ and 0/0 are undefined.
func ratio(a, b Num) Num {
	return Num(float64(a) / float64(b))
}
