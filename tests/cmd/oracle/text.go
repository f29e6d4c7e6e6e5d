package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// writeText prints the run, a TTFT table with each policy's ratio to the oracle, and the pods'
// shares, as markdown.
func writeText(w io.Writer, out *output, o *options) {
	fmt.Fprintf(
		w,
		"oracle: workload %s (seed %d), %.2f req/s for %s, %d requests; fleet %s, max_loras %d; simulated on a virtual clock\n\n",
		out.Workload,
		out.Seed,
		out.Rate,
		out.Duration,
		len(out.Policies[0].Report.Requests),
		o.fleet,
		out.MaxLoras,
	)
	fmt.Fprintln(
		w,
		"| policy | TTFT P50 | TTFT P95 | TTFT P99 | TTFT mean | E2E P50 | E2E P95 | hit rate | adapter loads | preemptions | profile share | replay time |",
	)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range out.Policies {
		s := p.Summary
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %.1f%% | %d | %d | %s | %.1f s |\n", p.Policy,
			ms(s.TTFT.P50), ms(s.TTFT.P95), ms(s.TTFT.P99), ms(s.TTFT.Mean), ms(s.E2E.P50), ms(s.E2E.P95),
			100*s.HitRate, s.AdapterLoads, s.Preemptions, profileShare(s.ProfileShare), p.Wall.Seconds())
	}
	base := out.Policies[0].Summary.TTFT
	for _, p := range out.Policies[1:] {
		s := p.Summary.TTFT
		fmt.Fprintf(w, "\noracle / %s TTFT: P50 %.3f, P95 %.3f, P99 %.3f\n", p.Policy,
			ratio(base.P50, s.P50), ratio(base.P95, s.P95), ratio(base.P99, s.P99))
	}
	if len(out.Regions) > 0 {
		writeRegions(w, out)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| pod | profile |")
	for _, p := range out.Policies {
		fmt.Fprintf(w, " %s share |", p.Policy)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("---|", len(out.Policies)))
	for i, prof := range out.Fleet {
		fmt.Fprintf(w, "| %d | %s |", i, prof)
		for _, p := range out.Policies {
			fmt.Fprintf(w, " %.1f%% |", 100*p.Summary.Share[i])
		}
		fmt.Fprintln(w)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func profileShare(m map[string]float64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.1f%%", n, 100*m[n])
	}
	return strings.Join(parts, ", ")
}

// writeRegions prints each policy's TTFT per client region, the share of each region's requests
// served in another region, and each baseline's ratio to the oracle per region.
func writeRegions(w io.Writer, out *output) {
	fmt.Fprintln(w, "\nBy client region (round trips included):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| policy | client region | requests | TTFT P50 | TTFT P95 | TTFT P99 | served in another region |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, p := range out.Policies {
		for _, region := range out.Regions {
			s := p.Report.RegionSummary(region)
			away := oracle.Regions{PodRegion: out.PodRegions}.Away(p.Report, region)
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %d (%.1f%%) |\n", p.Policy, region, s.Requests,
				ms(s.TTFT.P50), ms(s.TTFT.P95), ms(s.TTFT.P99), away, 100*ratio(time.Duration(away), time.Duration(s.Requests)))
		}
	}
	for _, p := range out.Policies[1:] {
		for _, region := range out.Regions {
			a, b := out.Policies[0].Report.RegionSummary(region).TTFT, p.Report.RegionSummary(region).TTFT
			fmt.Fprintf(w, "\noracle / %s TTFT in %s: P50 %.3f, P95 %.3f, P99 %.3f", p.Policy, region,
				ratio(a.P50, b.P50), ratio(a.P95, b.P95), ratio(a.P99, b.P99))
		}
		fmt.Fprintln(w)
	}
}
