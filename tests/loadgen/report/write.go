package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

// ReadJSON reads a report written by WriteJSON, rejecting unknown fields and other schemas.
func ReadJSON(rd io.Reader) (*Report, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("report: read json: %w", err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("report: schema %q, want %q", r.Schema, Schema)
	}
	return &r, nil
}

// WriteMarkdown writes the figures as markdown tables: latencies, then ratios against the
// baseline, then where requests were served.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## loadgen: %s (seed %d, %s req/s for %gs)\n\n", r.Workload, r.Seed, r.RateRPS, r.DurationS)
	writeTrace(&b, r)
	b.WriteString("Times in ms; failed requests count as infinitely slow (∞).\n\n")
	b.WriteString(
		"| target | requests | errors | TTFT P50 | TTFT P95 | TTFT P99 | ITL P50 | ITL P99 | E2E P50 | E2E P95 | E2E P99 | output tok/s | prefix-cache hit |\n",
	)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %d | %d%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			t.Name, t.Requests, t.Errors, errorKinds(t.ErrorsByKind), t.TTFTMs.P50, t.TTFTMs.P95, t.TTFTMs.P99,
			t.ITLMs.P50, t.ITLMs.P99, t.E2EMs.P50, t.E2EMs.P95, t.E2EMs.P99, t.OutputTokensPerS, percent(t.PrefixCacheHitRate))
	}
	writeGoodput(&b, r)
	writeRatios(&b, r)
	writePlaces(&b, r)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// writeTrace says which trace was replayed, how, and whose it is.
func writeTrace(b *strings.Builder, r *Report) {
	t := r.Trace
	if t == nil {
		return
	}
	fmt.Fprintf(
		b,
		"Trace replay: %s `%s`, %d requests from %gs of the recording, at %g× the recorded rate",
		t.Format,
		t.File,
		t.Requests,
		t.StartS,
		t.TimeScale,
	)
	if t.PromptScale != 1 || t.OutputScale != 1 {
		fmt.Fprintf(b, ", prompts × %g, outputs × %g", t.PromptScale, t.OutputScale)
	}
	fmt.Fprintf(b, ". Trace: %s.\n\n", t.Attribution)
}

// writeGoodput writes the goodput table when the workload sets an SLO.
func writeGoodput(b *strings.Builder, r *Report) {
	if r.SLO == nil {
		return
	}
	var bounds []string
	if r.SLO.TTFTMs > 0 {
		bounds = append(bounds, fmt.Sprintf("TTFT ≤ %g ms", r.SLO.TTFTMs))
	}
	if r.SLO.TPOTMs > 0 {
		bounds = append(bounds, fmt.Sprintf("time per output token ≤ %g ms", r.SLO.TPOTMs))
	}
	fmt.Fprintf(b, "\nGoodput: requests that succeeded with %s.\n\n", strings.Join(bounds, " and "))
	b.WriteString("| target | within SLO | share | goodput req/s |\n|---|---:|---:|---:|\n")
	for _, t := range r.Targets {
		if g := t.Goodput; g != nil {
			fmt.Fprintf(b, "| %s | %d | %s | %s |\n", t.Name, g.Requests, percent(g.Fraction), g.PerS)
		}
	}
}

// writeRatios writes the ratio table when there is a baseline.
func writeRatios(b *strings.Builder, r *Report) {
	if r.Baseline == "" {
		return
	}
	fmt.Fprintf(b, "\nRatios against %s (below 1 is faster; output tok/s above 1 is more).\n\n", r.Baseline)
	b.WriteString(
		"| target | " + strings.Join(RatioKeys, " | ") + " |\n|---|" + strings.Repeat("---:|", len(RatioKeys)) + "\n",
	)
	for _, t := range r.Targets {
		b.WriteString("| " + t.Name)
		for _, k := range RatioKeys {
			b.WriteString(" | " + t.Ratios[k].String())
		}
		b.WriteString(" |\n")
	}
}

// writePlaces lists where each target's requests were served.
func writePlaces(b *strings.Builder, r *Report) {
	b.WriteString("\nWhere requests were served (share of requests).\n\n")
	for _, t := range r.Targets {
		fmt.Fprintf(b, "- %s: endpoints %s", t.Name, shares(t.EndpointShare))
		for _, s := range []struct {
			name string
			m    map[string]float64
		}{{"clusters", t.ClusterShare}, {"regions", t.RegionShare}, {"routes", t.RouteShare}} {
			if s.m != nil {
				fmt.Fprintf(b, "; %s %s", s.name, shares(s.m))
			}
		}
		b.WriteString("\n")
	}
}

func errorKinds(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func shares(m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %s", k, percent(Num(m[k]))))
	}
	return strings.Join(parts, ", ")
}

func percent(n Num) string {
	if n != n {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", float64(n)*100)
}
