package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// DefaultPolicy is the shipped profile the sweep's statements are about.
const DefaultPolicy = "default"

// Aggregate is one (scenario, load, policy)'s figures over its report seeds: the mean of each
// seed's figure with its confidence interval.
type Aggregate struct {
	Scenario string   `json:"scenario"`
	Load     float64  `json:"load"`
	Policy   string   `json:"policy"`
	Seeds    []uint64 `json:"seeds"`
	// RateRPS is the mean arrival rate (simulated req/s); Errors sums the failed requests.
	RateRPS float64 `json:"rate_rps"`
	Errors  int     `json:"errors"`
	// TTFT percentiles and mean ITL in real ms, output tokens per real second, goodput a share.
	TTFTP50          Estimate `json:"ttft_p50_ms"`
	TTFTP95          Estimate `json:"ttft_p95_ms"`
	TTFTP99          Estimate `json:"ttft_p99_ms"`
	MeanITL          Estimate `json:"mean_itl_ms"`
	OutputTokensPerS Estimate `json:"output_tokens_per_s"`
	Goodput          Estimate `json:"goodput"`
}

// scenarioCells are one scenario's sweep cells, grouped for its table and plot.
type scenarioCells struct {
	scenario string
	fleet    string
	capacity float64
	loads    []float64
	policies []string // in run order, then the oracle when it ran
	cells    []*CellResult
}

// groupSweep groups cells of kind "sweep" by scenario, in the order they come.
func groupSweep(cells []*CellResult) []*scenarioCells {
	var out []*scenarioCells
	for _, c := range cells {
		if c.Config.Kind != "sweep" {
			continue
		}
		i := slices.IndexFunc(out, func(s *scenarioCells) bool { return s.scenario == c.Config.Scenario })
		if i < 0 {
			out = append(out, &scenarioCells{scenario: c.Config.Scenario, fleet: c.Config.Fleet, capacity: c.Config.CapacityRPS})
			i = len(out) - 1
		}
		s := out[i]
		s.cells = append(s.cells, c)
		if !slices.Contains(s.loads, c.Config.Load) {
			s.loads = append(s.loads, c.Config.Load)
		}
		for _, p := range c.Config.Policies {
			if !slices.Contains(s.policies, p) {
				s.policies = append(s.policies, p)
			}
		}
	}
	for _, s := range out {
		slices.Sort(s.loads)
		if slices.ContainsFunc(s.cells, func(c *CellResult) bool { return c.Oracle != nil }) {
			s.policies = append(s.policies, OraclePolicy)
		}
	}
	return out
}

// aggregate computes every (load, policy) of s, loads ascending, policies in order.
func (s *scenarioCells) aggregate() []Aggregate {
	var out []Aggregate
	for _, load := range s.loads {
		for _, p := range s.policies {
			out = append(out, s.aggregateOne(load, p))
		}
	}
	return out
}

func (s *scenarioCells) aggregateOne(load float64, policy string) Aggregate {
	a := Aggregate{Scenario: s.scenario, Load: load, Policy: policy}
	var p50, p95, p99, itl, tps, good []float64
	for _, c := range s.cells {
		f := c.Policy(policy)
		if c.Config.Load != load || f == nil {
			continue
		}
		a.Seeds = append(a.Seeds, c.Config.Seed)
		a.RateRPS, a.Errors = c.RateRPS, a.Errors+f.Errors
		p50, p95, p99 = append(
			p50,
			float64(f.TTFTMs.P50),
		), append(
			p95,
			float64(f.TTFTMs.P95),
		), append(
			p99,
			float64(f.TTFTMs.P99),
		)
		itl, tps, good = appendFinite(
			itl,
			float64(f.MeanITLMs),
		), appendFinite(
			tps,
			float64(f.OutputTokensPerS),
		), appendFinite(
			good,
			float64(f.Goodput),
		)
	}
	a.TTFTP50, a.TTFTP95, a.TTFTP99 = MeanCI(p50), MeanCI(p95), MeanCI(p99)
	a.MeanITL, a.OutputTokensPerS, a.Goodput = MeanCI(itl), MeanCI(tps), MeanCI(good)
	return a
}

// appendFinite appends x unless it is NaN (a figure the run could not measure).
func appendFinite(xs []float64, x float64) []float64 {
	if math.IsNaN(x) {
		return xs
	}
	return append(xs, x)
}

// Comparison is how one policy's estimate stands against another's.
type Comparison int

// The outcomes of compare, from the first estimate's side (lower is better).
const (
	Ties Comparison = iota
	Wins
	Loses
)

func (c Comparison) String() string { return [...]string{"ties", "wins", "loses"}[c] }

// compare says whether a is lower than b beyond their intervals: it wins when its interval lies
// wholly below b's, loses when wholly above, and ties when they overlap. Without intervals (one
// seed) it compares the means; an infinite figure loses to any finite one.
func compare(a, b Estimate) Comparison {
	switch {
	case math.IsNaN(a.Mean) || math.IsNaN(b.Mean):
		return Ties
	case math.IsInf(a.Mean, 1) || math.IsInf(b.Mean, 1):
		switch {
		case math.IsInf(a.Mean, 1) && math.IsInf(b.Mean, 1):
			return Ties
		case math.IsInf(a.Mean, 1):
			return Loses
		}
		return Wins
	case !a.HasCI() || !b.HasCI():
		switch {
		case a.Mean < b.Mean:
			return Wins
		case a.Mean > b.Mean:
			return Loses
		}
		return Ties
	case a.Hi() < b.Lo():
		return Wins
	case a.Lo() > b.Hi():
		return Loses
	}
	return Ties
}

// verdicts states, per load, where the default profile's P95 TTFT ties or loses against
// another policy (the oracle aside), and whom it beats.
func verdicts(aggs []Aggregate, loads []float64) []string {
	var lines []string
	for _, load := range loads {
		i := slices.IndexFunc(aggs, func(a Aggregate) bool { return a.Load == load && a.Policy == DefaultPolicy })
		if i < 0 {
			continue
		}
		d := aggs[i]
		by := map[Comparison][]string{}
		for _, a := range aggs {
			if a.Load != load || a.Policy == DefaultPolicy || a.Policy == OraclePolicy {
				continue
			}
			c := compare(d.TTFTP95, a.TTFTP95)
			by[c] = append(by[c], fmt.Sprintf("%s (%s)", a.Policy, fmtMs(a.TTFTP95)))
		}
		parts := []string{fmt.Sprintf("load %.2f: default P95 TTFT %s ms", load, fmtMs(d.TTFTP95))}
		for _, c := range []Comparison{Loses, Ties, Wins} {
			if len(by[c]) > 0 {
				what := map[Comparison]string{Loses: "**loses** to", Ties: "**ties** with", Wins: "beats"}[c]
				parts = append(parts, what+" "+strings.Join(by[c], ", "))
			}
		}
		lines = append(lines, strings.Join(parts, "; "))
	}
	return lines
}

// belowOracle lists the (load, policy) pairs whose mean P95 TTFT is below the oracle's: the
// greedy oracle is a reference, not a proof of a bound, so these are worth a look, not errors.
func belowOracle(aggs []Aggregate) []Aggregate {
	var out []Aggregate
	for _, a := range aggs {
		if a.Policy == OraclePolicy {
			continue
		}
		i := slices.IndexFunc(aggs, func(o Aggregate) bool { return o.Load == a.Load && o.Policy == OraclePolicy })
		if i >= 0 && a.TTFTP95.Mean < aggs[i].TTFTP95.Mean {
			out = append(out, a)
		}
	}
	return out
}
