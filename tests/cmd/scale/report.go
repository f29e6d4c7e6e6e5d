package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Report is everything one sweep measured, as written to results.json.
type Report struct {
	Timings     string     `json:"timings"`
	Network     string     `json:"network"`
	Latency     string     `json:"latency"`
	Loss        float64    `json:"loss"`
	Dilation    float64    `json:"dilation"`
	DilatePer   int        `json:"dilate_per,omitempty"`
	Routers     int        `json:"routers"`
	Models      int        `json:"models"`
	Adapters    int        `json:"adapters"`
	Busy        float64    `json:"busy"`
	Target      int        `json:"target"`
	Results     []Result   `json:"results"`
	Fits        Fits       `json:"fits"`
	Router      Benchmarks `json:"router_benchmarks,omitempty"`
	RouterError string     `json:"router_benchmarks_error,omitempty"`
}

// Fits are the curves fitted to the measured sizes.
type Fits struct {
	SentPerNode Fit `json:"sent_bytes_per_second_per_node"`
	AllP99      Fit `json:"all_routers_p99_ms"`
	AllP50      Fit `json:"all_routers_p50_ms"`
	HeapPerNode Fit `json:"heap_bytes_per_node"`
	SnapshotP99 Fit `json:"snapshot_p99_us"`
}

// mergeReports reads the reports of several sweeps (results.json) and merges their results, by
// pool size, into one report with the first's settings and its router benchmarks, fitted anew:
// sizes measured with different dilations in one table.
func mergeReports(paths []string) (*Report, error) {
	var out *Report
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("scale: %w", err)
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("scale: %s: %w", p, err)
		}
		for i := range r.Results {
			if r.Results[i].Dilation == 0 { // written before results recorded their dilation
				r.Results[i].Dilation = max(r.Dilation, 1)
			}
		}
		if out == nil {
			out = &r
			continue
		}
		out.Results = append(out.Results, r.Results...)
	}
	if out == nil {
		return nil, errors.New("scale: no report to merge")
	}
	slices.SortStableFunc(out.Results, func(a, b Result) int { return a.Gateways - b.Gateways })
	out.fit()
	return out, nil
}

// measured returns the results that have figures.
func (r *Report) measured() []Result {
	return slices.DeleteFunc(slices.Clone(r.Results), func(x Result) bool { return x.Stopped != "" })
}

// collapsed reports whether the pool stopped carrying summaries: most of those the routers held
// were stale, or no marked change reached a router.
func (x *Result) collapsed() bool {
	return x.StaleFraction >= 0.5 || x.Marks > 0 && x.Missed >= x.Marks*max(x.Routers, 1)
}

// carrying returns the measured results of pools that still carried their summaries: the
// curves are fitted to them (a collapsed pool's figures measure the collapse).
func (r *Report) carrying() []Result {
	return slices.DeleteFunc(r.measured(), func(x Result) bool { return x.collapsed() })
}

// fit fits the curves to the measured sizes: bandwidth as a power law, convergence as
// a + b·ln N (an epidemic reaches N nodes in O(log N) rounds while it has bandwidth), memory per
// node and the Snapshot as linear in N (every node holds every summary; Snapshot copies them).
func (r *Report) fit() {
	var ns, sent, p99, p50, heap, snap []float64
	for _, x := range r.carrying() {
		ns = append(ns, float64(x.Gateways))
		sent, p99, p50 = append(sent, x.SentPerNode), append(p99, x.AllP99), append(p50, x.AllP50)
		heap, snap = append(heap, x.HeapPerNode), append(snap, x.SnapshotP99)
	}
	r.Fits = Fits{
		SentPerNode: fitCurve("power", ns, sent),
		AllP99:      fitCurve("log", ns, p99),
		AllP50:      fitCurve("log", ns, p50),
		HeapPerNode: fitCurve("linear", ns, heap),
		SnapshotP99: fitCurve("linear", ns, snap),
	}
}

// atTarget returns a figure at the target size: measured when the sweep reached it, else the
// fit's value, with a note saying which.
func (r *Report) atTarget(measured func(Result) float64, f Fit) (float64, string) {
	for _, x := range r.carrying() {
		if x.Gateways == r.Target {
			return measured(x), "measured"
		}
	}
	if f.Points < 2 {
		return math.NaN(), "not enough sizes measured to extrapolate"
	}
	return f.At(float64(r.Target)), "extrapolated: " + f.String()
}

// write writes results.json, scale.md and the plots into dir.
func (r *Report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("scale: results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("scale: results: %w", err)
	}
	var md strings.Builder
	r.markdown(&md)
	if err := os.WriteFile(filepath.Join(dir, "scale.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("scale: table: %w", err)
	}
	return r.plots(dir)
}

// markdown writes the measured table, the fits and the targets at the target size.
func (r *Report) markdown(w io.Writer) {
	fmt.Fprintf(w, "Gossip pool: %s timings, %d routers, %d models × %d adapters per cluster, %.0f%% of "+
		"gateways busy (every figure changing every 250 ms), the rest heartbeating every second.\n",
		r.Timings, r.Routers, r.Models, r.Adapters, 100*r.Busy)
	net := "UDP and TCP on 127.0.0.1"
	if r.Network == "sim" {
		net = fmt.Sprintf("the in-memory network (one-way latency %s, loss %.2g%%)", r.Latency, 100*r.Loss)
	}
	fmt.Fprintf(w, "Network: %s; time dilated ×%g, or N/%d where more (periods, intervals and latency "+
		"stretched, figures converted back to the modelled clock; CPU per real second).\n\n",
		net, r.Dilation, r.DilatePer)
	fmt.Fprintln(w, "| N gateways | sent B/s per node | relayed B/s per node | own B/s per gateway | "+
		"change → a router p50 / p99 | → every router p50 / p99 | summary age p99 | stale | heap per node | "+
		"Snapshot p50 / p99 | CPU per node | form | dilation | load average |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, x := range r.Results {
		if x.Stopped != "" {
			fmt.Fprintf(w, "| %d | stopped: %s | | | | | | | | | | | | %s |\n", x.Gateways, x.Stopped, x.LoadAverage)
			continue
		}
		arrival := fmt.Sprintf("%.0f / %.0f ms", x.ArrivalP50, x.ArrivalP99)
		all := fmt.Sprintf("%.0f / %.0f ms", x.AllP50, x.AllP99)
		if x.collapsed() {
			arrival, all = "collapsed: "+arrival, "collapsed: "+all
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %.0f ms | %.1f%% | %.2f MiB | "+
			"%.0f / %.0f µs | %.1f ms/s | %.0f s | ×%g | %s |\n",
			x.Gateways, kb(x.SentPerNode), kb(x.RelayedPerNode), kb(x.OwnPerGateway), arrival,
			all, x.AgeP99, 100*x.StaleFraction, x.HeapPerNode/(1<<20), x.SnapshotP50, x.SnapshotP99,
			1000*x.CPUPerNode, x.FormSeconds, x.Dilation, x.LoadAverage)
	}
	fmt.Fprintf(
		w,
		"\nFits over the measured sizes whose pool still carried its summaries: sent per node %s B/s; "+
			"every router p99 %s ms; "+
			"heap per node %s B; Snapshot p99 %s µs.\n\n",
		r.Fits.SentPerNode,
		r.Fits.AllP99,
		r.Fits.HeapPerNode,
		r.Fits.SnapshotP99,
	)
	r.targets(w)
}

// targets writes the goals at the target size, each measured or extrapolated.
func (r *Report) targets(w io.Writer) {
	fmt.Fprintf(w, "| at N = %d | figure | goal | how |\n|---|---|---|---|\n", r.Target)
	row := func(name string, v float64, unit string, goal float64, how string) {
		verdict := "met"
		if math.IsNaN(v) {
			verdict = "unknown"
		} else if v > goal {
			verdict = "**not met**"
		}
		fmt.Fprintf(w, "| %s | %.4g %s | ≤ %.4g %s (%s) | %s |\n", name, v, unit, goal, unit, verdict, how)
	}
	v, how := r.atTarget(func(x Result) float64 { return x.AllP99 }, r.Fits.AllP99)
	row("change visible at every router, p99", v, "ms", 2000, how)
	v, how = r.atTarget(func(x Result) float64 { return x.SentPerNode }, r.Fits.SentPerNode)
	row("bytes sent per node", v/1000, "KB/s", 50, how)
	heap, how := r.atTarget(func(x Result) float64 { return x.HeapPerNode }, r.Fits.HeapPerNode)
	table := r.Router.get(fmt.Sprintf("BenchmarkRouteAtScale/clusters=%d/models=10", r.Target), "table-MiB")
	row("router memory (gossip state + cluster table)", heap/(1<<20)+table, "MiB", 512,
		how+fmt.Sprintf("; table %.1f MiB (BenchmarkRouteAtScale)", table))
	snap, how := r.atTarget(func(x Result) float64 { return x.SnapshotP99 }, r.Fits.SnapshotP99)
	decide := r.Router.get(fmt.Sprintf("BenchmarkRouteAtScale/clusters=%d/models=10", r.Target), "p99-us")
	row("route decision p99 (Snapshot + table view + decision)", snap+decide, "µs", 20,
		fmt.Sprintf("Snapshot %.0f µs (%s) + BenchmarkRouteAtScale p99 %.0f µs", snap, how, decide))
	cpu := r.Router.get(fmt.Sprintf("BenchmarkRouteAtScale/clusters=%d/models=10", r.Target), "cpu-ms/1000req")
	fwd := r.Router.get("BenchmarkRouterThroughput/router", "router-cpu-us")
	fmt.Fprintf(w, "| CPU per 1,000 routed requests | %.0f ms deciding + %.0f ms proxying | | "+
		"BenchmarkRouteAtScale cpu-ms/1000req; BenchmarkRouterThroughput router-cpu-us × 1,000 (6 clusters) |\n",
		cpu, fwd)
	fmt.Fprintf(w, "| router throughput, 2 cores | %.0f req/s | ≥ 20,000 req/s | "+
		"BenchmarkRouterThroughput router-2core-req/s (its CPU per request on 6 clusters) |\n",
		r.Router.get("BenchmarkRouterThroughput/router", "router-2core-req/s"))
	for _, kind := range []string{"cluster", "region"} {
		name := "BenchmarkFailover/" + kind
		ms, lost := r.Router.get(name, "failover-ms"), r.Router.get(name, "lost-unstarted")
		verdict := "met"
		if ms > 2000 || lost > 0 {
			verdict = "**not met**"
		}
		fmt.Fprintf(w, "| failover of one %s | %.0f ms, %.0f unstarted lost, %.0f started lost | ≤ 2,000 ms, 0 lost (%s) "+
			"| %s |\n", kind, ms, lost, r.Router.get(name, "lost-started"), verdict, name)
	}
	if r.RouterError != "" {
		fmt.Fprintf(w, "\nRouter benchmarks: %s\n", r.RouterError)
	}
}

// plots writes the curves: bandwidth, convergence and memory against N.
func (r *Report) plots(dir string) error {
	var ns, sent, p50, p99, heap, snap []float64
	for _, x := range r.carrying() {
		ns = append(ns, float64(x.Gateways))
		sent, p50, p99 = append(sent, x.SentPerNode/1000), append(p50, x.AllP50), append(p99, x.AllP99)
		heap, snap = append(heap, x.HeapPerNode/(1<<20)), append(snap, x.SnapshotP99)
	}
	scaled := func(f Fit, by float64) Fit {
		if f.Kind == "linear" {
			return Fit{Kind: f.Kind, A: f.A / by, B: f.B / by, Points: f.Points}
		}
		return Fit{Kind: f.Kind, A: f.A / by, B: f.B, Points: f.Points}
	}
	t := float64(r.Target)
	charts := map[string]chart{
		"scale-bandwidth.png": {title: "bytes sent per node", ylabel: "KB/s", goal: 50, target: t,
			series: []series{{"sent", ns, sent, scaled(r.Fits.SentPerNode, 1000)}}},
		"scale-convergence.png": {title: "a change visible at every router", ylabel: "ms", goal: 2000, target: t,
			series: []series{{"p50", ns, p50, r.Fits.AllP50}, {"p99", ns, p99, r.Fits.AllP99}}},
		"scale-memory.png": {title: "heap per node (every summary of the pool)", ylabel: "MiB", target: t,
			series: []series{{"heap", ns, heap, scaled(r.Fits.HeapPerNode, 1<<20)}}},
		"scale-snapshot.png": {title: "router's gossip Snapshot per request, p99", ylabel: "µs", target: t,
			series: []series{{"Snapshot p99", ns, snap, r.Fits.SnapshotP99}}},
	}
	for name, c := range charts {
		if err := c.write(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// kb formats bytes per second as KB/s.
func kb(v float64) string { return fmt.Sprintf("%.1f KB/s", v/1000) }
