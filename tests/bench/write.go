package bench

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
)

// writeReports writes NAME.json (loadgen's report), NAME-pods.json (this package's figures),
// NAME.md (both, with the verdict), NAME-ttft.png (the TTFT CDF) and NAME-samples.csv (every
// request) into cfg.Out.
func writeReports(cfg *Config, res *Result) error {
	base := filepath.Join(cfg.Out, cfg.Scenario.Name)
	if res.Samples != nil {
		if err := writeSamples(base+"-samples.csv", res.Samples); err != nil {
			return err
		}
	}
	res.Files = report.Files{JSON: base + ".json", Plot: base + "-ttft.png", Markdown: base + ".md"}
	if err := report.WriteFiles(res.Report, report.Files{JSON: res.Files.JSON, Plot: res.Files.Plot}); err != nil {
		return err
	}
	extra, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+"-pods.json", append(extra, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	md, err := Markdown(cfg, res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(res.Files.Markdown, md, 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// Markdown renders a run: settings, the TTFT table with ratios, loadgen's full report, the pods'
// figures and the verdict.
func Markdown(cfg *Config, res *Result) ([]byte, error) {
	var b strings.Builder
	r := res.Report
	fmt.Fprintf(&b, "# %s\n\n", cfg.Scenario.Name)
	if res.Regional != nil {
		regionalHeader(&b, cfg, res)
	} else {
		tier1Table(&b, cfg, res)
	}
	if res.Verdict != nil {
		met := "MISSED"
		if res.Verdict.Met {
			met = "MET"
		}
		fmt.Fprintf(&b, "\nTarget: %s. **%s**: %s.\n", res.Target, met, res.Verdict.Detail)
	}
	if res.Regional == nil {
		b.WriteString("\n## Per-pod figures\n\n")
		writePods(&b, res.Policies)
		writeAffinity(&b, res.Affinity)
	}
	b.WriteString("\n## loadgen report\n\n")
	var lg bytes.Buffer
	if err := report.WriteMarkdown(&lg, r); err != nil {
		return nil, err
	}
	b.Write(lg.Bytes())
	return []byte(b.String()), nil
}

func regionalHeader(b *strings.Builder, cfg *Config, res *Result) {
	r := res.Report
	runs := ""
	if res.Repeat > 1 {
		runs = fmt.Sprintf(", %d times on fresh stacks, pooled", res.Repeat)
	}
	fmt.Fprintf(
		b,
		"Per router mode, an identical stack: %s. Workload `%s`, seed %d, %.2f req/s mean (simulated) for %.0f s of "+
			"arrivals%s (fleet capacity %.2f req/s%s). modelsim time scale %g%s%s. Load average at start / end of arrivals: "+
			"%s / %s.\n\n",
		regionsLine(
			cfg.Scenario,
		),
		r.Workload,
		r.Seed,
		res.RateRPS,
		r.DurationS/res.TimeScale/float64(max(res.Repeat, 1)),
		runs,
		res.Capacity,
		podCapacity(res.PodCapacity),
		res.TimeScale,
		timeNote(res.TimeScale),
		physicsSuffix(res),
		res.LoadAvg[0],
		res.LoadAvg[1],
	)
	regionalMarkdown(b, cfg.Scenario, r, res.Regional)
}

func tier1Table(b *strings.Builder, cfg *Config, res *Result) {
	r := res.Report
	fmt.Fprintf(b, "Fleet per policy: %s. Workload `%s`, seed %d, %.2f req/s (simulated) for %.0f s of arrivals "+
		"(fleet capacity %.2f req/s%s). modelsim time scale %g%s%s. Load average at start / end of arrivals: %s / %s.\n\n",
		pools(cfg.Scenario), r.Workload, r.Seed, res.RateRPS, r.DurationS/res.TimeScale,
		res.Capacity, podCapacity(res.PodCapacity), res.TimeScale, timeNote(res.TimeScale), physicsSuffix(res),
		res.LoadAvg[0], res.LoadAvg[1])
	traceLines(b, cfg.Scenario.Pods(), res)
	if res.Trace != nil {
		traceTable(b, res)
		return
	}
	b.WriteString(
		"| policy | TTFT P50 | P95 | P99 | P50 / RR | P95 / RR | P99 / RR | errors | hit rate | adapter loads |\n",
	)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %d | %.1f%% | %d |\n", t.Name,
			t.TTFTMs.P50, t.TTFTMs.P95, t.TTFTMs.P99,
			t.Ratios["ttft_p50"], t.Ratios["ttft_p95"], t.Ratios["ttft_p99"],
			t.Errors, 100*float64(t.PrefixCacheHitRate), res.AdapterLoads(t.Name))
	}
}

func writePods(b *strings.Builder, policies []PolicyStats) {
	if len(policies) == 0 {
		return
	}
	b.WriteString(
		"Request share per pod (x-switchyard-endpoint); then adapter loads, preemptions, engine prefix-cache " +
			"hit rate, step-lag p99 and the highest KV use of any pod over the fleet, and the gateway's " +
			"scheduling outcomes.\n\n| policy |",
	)
	for _, p := range policies[0].Pods {
		fmt.Fprintf(b, " %s |", p.Pod)
	}
	b.WriteString(
		" adapter loads | preemptions | engine hit rate | step lag p99 | max pod KV | gateway decisions |\n|---|",
	)
	b.WriteString(strings.Repeat("---|", len(policies[0].Pods)+6) + "\n")
	for _, ps := range policies {
		fmt.Fprintf(b, "| %s |", ps.Policy)
		lag := 0.0
		for _, p := range ps.Pods {
			fmt.Fprintf(b, " %.1f%% |", 100*p.Share)
			lag = max(lag, p.StepLagP99Ms)
		}
		fmt.Fprintf(
			b,
			" %d | %d | %.1f%% | %.0f ms | %.1f%% | %s |\n",
			ps.AdapterLoads,
			ps.Preemptions,
			100*ps.EnginePrefixHitRate,
			lag,
			100*ps.MaxKV,
			counts(ps.Decisions),
		)
	}
}

func pools(sc Scenario) string {
	all := sc.allPools()
	parts := make([]string, len(all))
	for i, p := range all {
		parts[i] = fmt.Sprintf("%d × %s", p.Count, p.Profile)
	}
	s := strings.Join(parts, " + ")
	if sc.MaxLoras > 0 {
		s += fmt.Sprintf(" (max_loras %d)", sc.MaxLoras)
	}
	for _, policy := range slices.Sorted(maps.Keys(sc.PolicyPools)) {
		var own []string
		for _, p := range sc.PolicyPools[policy] {
			own = append(own, fmt.Sprintf("%d × %s %s", p.Count, p.Profile, cmp.Or(p.Role, "both")))
		}
		s += fmt.Sprintf("; %s: %s", policy, strings.Join(own, " + "))
	}
	return s
}

func podCapacity(m map[string]float64) string {
	if len(m) == 0 {
		return ", given"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", k, m[k])
	}
	return "; per pod: " + strings.Join(parts, ", ")
}

func timeNote(ts float64) string {
	if ts == 1 {
		return ""
	}
	return fmt.Sprintf(" (latencies below are real ms: %g × simulated)", ts)
}

func counts(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// physicsNote describes the pods' physics and cached-token reporting when they are not modelsim's
// defaults, and is empty otherwise.
func physicsNote(cfg *Config) string {
	var parts []string
	if cfg.Physics.Family != physics.Linear {
		parts = append(parts, "physics "+string(cfg.Physics.Family))
	}
	if cfg.Physics.Jitter != physics.FamilyDefaultJitter {
		parts = append(parts, fmt.Sprintf("step jitter σ %g", cfg.Physics.Jitter))
	}
	if !cfg.ReportCachedTokens {
		parts = append(parts, "no cached_tokens in usage")
	}
	return strings.Join(parts, ", ")
}

// physicsSuffix is the markdown header's mention of a non-default physics.
func physicsSuffix(res *Result) string {
	if res.Physics == "" {
		return ""
	}
	return ", " + res.Physics
}
