package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

// SweepSchema names the layout of a scenario's sweep summary (SCENARIO.json).
const SweepSchema = "switchyard.bench.sweep/v1"

// sweepSummary is a scenario's summary file.
type sweepSummary struct {
	Schema     string      `json:"schema"`
	Scenario   string      `json:"scenario"`
	Fleet      string      `json:"fleet"`
	Capacity   float64     `json:"capacity_rps"`
	Settings   CellConfig  `json:"settings"`
	Aggregates []Aggregate `json:"aggregates"`
}

// writeSweep writes, per scenario, SCENARIO.md (the table), SCENARIO.json (the aggregates) and
// SCENARIO-p95.png (offered load against P95 TTFT), then sensitivity.md and sweep.md (all of
// them in one page) into cfg.Out, and returns the files written.
func writeSweep(cfg *SweepConfig, cells []*CellResult) ([]string, error) {
	var files []string
	var all strings.Builder
	all.WriteString("# Routing sweep\n\n")
	sweepSettings(&all, cfg, cells)
	for _, s := range groupSweep(cells) {
		aggs := s.aggregate()
		var b strings.Builder
		scenarioMarkdown(&b, s, aggs, s.scenario+"-p95.png")
		base := filepath.Join(cfg.Out, s.scenario)
		sum := sweepSummary{Schema: SweepSchema, Scenario: s.scenario, Fleet: s.fleet, Capacity: s.capacity,
			Settings: s.cells[0].Config, Aggregates: aggs}
		sum.Settings.Seed, sum.Settings.Load = 0, 0
		if err := writeJSON(base+".json", sum); err != nil {
			return files, err
		}
		if err := os.WriteFile(base+".md", []byte(b.String()), 0o644); err != nil {
			return files, fmt.Errorf("bench: sweep: %w", err)
		}
		if err := writeSweepPlot(base+"-p95.png", s, aggs); err != nil {
			return files, err
		}
		files = append(files, base+".md", base+".json", base+"-p95.png")
		all.WriteString(b.String())
	}
	if t := sensitivityTable(cells); t != "" {
		path := filepath.Join(cfg.Out, "sensitivity.md")
		if err := os.WriteFile(path, []byte(t), 0o644); err != nil {
			return files, fmt.Errorf("bench: sweep: %w", err)
		}
		files = append(files, path)
		all.WriteString(t)
	}
	path := filepath.Join(cfg.Out, "sweep.md")
	if err := os.WriteFile(path, []byte(all.String()), 0o644); err != nil {
		return files, fmt.Errorf("bench: sweep: %w", err)
	}
	return append(files, path), nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: sweep: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: sweep: %w", err)
	}
	return nil
}

// sweepSettings writes what every table shares: duration, seeds, SLO, time scale, and the
// machine's load and the dates the cells ran.
func sweepSettings(b *strings.Builder, cfg *SweepConfig, cells []*CellResult) {
	dur := "the workloads' own (60 s)"
	if d := cfg.Bench.Duration; d > 0 {
		dur = d.String()
	}
	seeds := ReportSeeds(cfg.Seeds)
	fmt.Fprintf(
		b,
		"Arrivals per run: %s (simulated). Report seeds: %d (%d…%d). Goodput: share of requests that succeeded with TTFT ≤ %s and mean ITL ≤ %s. "+
			"modelsim time scale %g%s. Figures are the mean over seeds ± the half-width of the %.0f%% confidence interval (Student t, seeds − 1 degrees of freedom); ms unless stated; failures are infinite in every percentile.\n\n",
		dur,
		len(seeds),
		seeds[0],
		seeds[len(seeds)-1],
		cfg.SLO.TTFT,
		cfg.SLO.TPOT,
		cfg.Bench.TimeScale,
		timeNote(cfg.Bench.TimeScale),
		100*ConfidenceLevel,
	)
	var first, last time.Time
	var loads []string
	for _, c := range cells {
		if first.IsZero() || c.Finished.Before(first) {
			first = c.Finished
		}
		last = maxTime(last, c.Finished)
		loads = append(loads, c.LoadAvg[:]...)
	}
	lo, hi := loadRange(loads)
	host, _ := os.Hostname()
	fmt.Fprintf(b, "Cells finished %s – %s on %s (%d CPUs); 1-minute load average %s–%s over the cells.\n\n",
		first.Format(time.RFC3339), last.Format(time.RFC3339), host, numCPU(), lo, hi)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// loadRange returns the smallest and largest of load-average strings ("?" when none parse).
func loadRange(vals []string) (string, string) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		var f float64
		if _, err := fmt.Sscanf(v, "%g", &f); err == nil {
			lo, hi = min(lo, f), max(hi, f)
		}
	}
	if math.IsInf(lo, 1) {
		return "?", "?"
	}
	return fmt.Sprintf("%.1f", lo), fmt.Sprintf("%.1f", hi)
}

// scenarioMarkdown writes one scenario's table, the default profile's standing per load, and
// the pairs below the oracle.
func scenarioMarkdown(b *strings.Builder, s *scenarioCells, aggs []Aggregate, plot string) {
	fmt.Fprintf(
		b,
		"## %s\n\nFleet per policy: %s; fleet capacity %.2f req/s (simulated). ![P95 TTFT against offered load](%s)\n\n",
		s.scenario,
		s.fleet,
		s.capacity,
		plot,
	)
	b.WriteString(
		"| load | req/s | policy | seeds | TTFT P50 | TTFT P95 | TTFT P99 | mean ITL | output tok/s | goodput | errors |\n",
	)
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range aggs {
		name := a.Policy
		if name == OraclePolicy {
			name = "*oracle (simulated)*"
		}
		fmt.Fprintf(
			b,
			"| %.2f | %.2f | %s | %d | %s | %s | %s | %s | %s | %s | %d |\n",
			a.Load,
			a.RateRPS,
			name,
			len(a.Seeds),
			fmtMs(
				a.TTFTP50,
			),
			fmtMs(a.TTFTP95),
			fmtMs(a.TTFTP99),
			fmtMs(a.MeanITL),
			fmtMs(a.OutputTokensPerS),
			fmtPct(a.Goodput),
			a.Errors,
		)
	}
	if v := verdicts(aggs, s.loads); len(v) > 0 {
		b.WriteString("\nThe default profile's P95 TTFT against each policy (a tie is an overlap of the 95% intervals):\n\n")
		for _, line := range v {
			b.WriteString("- " + line + "\n")
		}
	}
	if low := belowOracle(aggs); len(low) > 0 {
		var parts []string
		for _, a := range low {
			parts = append(parts, fmt.Sprintf("%s at %.2f", a.Policy, a.Load))
		}
		fmt.Fprintf(
			b,
			"\nBelow the oracle's mean P95 (a greedy reference, not a strict bound): %s.\n",
			strings.Join(parts, ", "),
		)
	}
	b.WriteString("\n")
}

// fmtMs formats an estimate "mean ± half-width" ("∞" when infinite, the mean alone without an
// interval).
func fmtMs(e Estimate) string {
	m := report.Num(e.Mean).String()
	if !e.HasCI() {
		return m
	}
	return m + " ± " + report.Num(e.HalfWidth).String()
}

// fmtPct formats a share estimate in percent.
func fmtPct(e Estimate) string {
	if math.IsNaN(e.Mean) {
		return "-"
	}
	if !e.HasCI() {
		return fmt.Sprintf("%.1f%%", 100*e.Mean)
	}
	return fmt.Sprintf("%.1f%% ± %.1f", 100*e.Mean, 100*e.HalfWidth)
}

// sensitivityTable renders the sensitivity cells ("" without any): per weight and factor, the
// variant's P95 TTFT and its ratio to the unchanged profile's in the same runs.
func sensitivityTable(cells []*CellResult) string {
	var sens []*CellResult
	for _, c := range cells {
		if c.Config.Kind == "sensitivity" {
			sens = append(sens, c)
		}
	}
	if len(sens) == 0 {
		return ""
	}
	var ref []float64
	seeds := map[uint64]bool{}
	for _, c := range sens {
		if f := c.Policy(SensitivityReference); f != nil {
			ref = append(ref, float64(f.TTFTMs.P95))
		}
		seeds[c.Config.Seed] = true
	}
	var b strings.Builder
	c0 := sens[0].Config
	fmt.Fprintf(
		&b,
		"## Sensitivity of the default profile's weights\n\n%s at load %.2f (%.2f req/s), tuning seeds %s; each weight of `%s` multiplied by one factor at a time, "+
			"every variant run beside the unchanged profile (%s) on the same requests. P95 TTFT in ms, mean ± 95%% CI over seeds; the ratio is to the unchanged profile's P95 in the same run (paired).\n\n",
		c0.Scenario,
		c0.Load,
		sens[0].RateRPS,
		seedList(seeds),
		ProfileFile,
		SensitivityReference,
	)
	fmt.Fprintf(&b, "Unchanged profile: P95 TTFT %s ms over %d runs.\n\n", fmtMs(MeanCI(ref)), len(ref))
	b.WriteString("| variant | P95 TTFT | / unchanged (paired) | errors |\n|---|---:|---:|---:|\n")
	var variants []string
	for _, c := range sens {
		for _, p := range c.Config.Policies {
			if p != SensitivityReference && !slices.Contains(variants, p) {
				variants = append(variants, p)
			}
		}
	}
	for _, v := range variants {
		var p95, ratio []float64
		errs := 0
		for _, c := range sens {
			f, r := c.Policy(v), c.Policy(SensitivityReference)
			if f == nil || r == nil {
				continue
			}
			p95 = append(p95, float64(f.TTFTMs.P95))
			ratio = append(ratio, float64(f.TTFTMs.P95)/float64(r.TTFTMs.P95))
			errs += f.Errors
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d |\n", v, fmtMs(MeanCI(p95)), fmtRatio(MeanCI(ratio)), errs)
	}
	b.WriteString("\n")
	return b.String()
}

func fmtRatio(e Estimate) string {
	if math.IsNaN(e.Mean) || math.IsInf(e.Mean, 0) {
		return report.Num(e.Mean).String()
	}
	if !e.HasCI() {
		return fmt.Sprintf("%.3f", e.Mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", e.Mean, e.HalfWidth)
}

func seedList(seeds map[uint64]bool) string {
	var s []uint64
	for k := range seeds {
		s = append(s, k)
	}
	slices.Sort(s)
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
