package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// Main runs the sweep with the command line's flags and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.String("nodes", joinInts(cfg.Nodes), "pool sizes to measure, in gateways, comma-separated")
	fs.IntVar(&cfg.Routers, "routers", cfg.Routers, "router nodes in each pool")
	fs.IntVar(&cfg.Regions, "regions", cfg.Regions, "regions the clusters and routers are spread over")
	fs.IntVar(&cfg.Models, "models", cfg.Models, "base models per cluster summary")
	fs.IntVar(&cfg.Adapters, "adapters", cfg.Adapters, "LoRA adapters per model")
	fs.Float64Var(&cfg.Busy, "busy", cfg.Busy, "fraction of gateways whose figures change every 250 ms")
	timings := fs.String("timings", cfg.TimingsName, "gossip timings: lan or wan")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before each measured window")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "measured window per pool size")
	fs.DurationVar(&cfg.MarkEvery, "mark-every", cfg.MarkEvery, "interval of the timed changes")
	fs.DurationVar(&cfg.FormTimeout, "form-timeout", cfg.FormTimeout, "longest a pool may take to form")
	fs.DurationVar(&cfg.PerNTimeout, "per-n-timeout", cfg.PerNTimeout, "longest one pool size may take")
	fs.DurationVar(&cfg.MaxDuration, "max-duration", cfg.MaxDuration, "no pool size starts after this")
	fs.IntVar(&cfg.Target, "target", cfg.Target, "size the fitted curves are extrapolated to")
	fs.StringVar(&cfg.Network, "net", cfg.Network, "network: sim (in memory, no sockets) or loopback (UDP/TCP)")
	fs.DurationVar(&cfg.Latency, "latency", cfg.Latency, "simulated one-way latency")
	fs.DurationVar(&cfg.Jitter, "jitter", cfg.Jitter, "simulated latency jitter (uniform, added)")
	fs.Float64Var(&cfg.Loss, "loss", cfg.Loss, "simulated datagram loss (0..1)")
	fs.Float64Var(&cfg.Dilation, "dilate", cfg.Dilation,
		"time dilation factor: gossip periods and intervals stretched by it, figures converted back")
	fs.IntVar(&cfg.DilatePer, "dilate-per", cfg.DilatePer,
		"dilate each pool size N by at least N divided by this (0: --dilate for every size)")
	out := fs.String("out", "scale-results", "directory for results.json, scale.md and the PNG plots")
	routerBench := fs.Bool("router-bench", true, "also run the global-router at-scale Go benchmarks")
	from := fs.String("from", "", "no sweep: merge these results.json files (comma-separated) into one report")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if cfg.Nodes, err = parseInts(*nodes); err != nil {
		fmt.Fprintf(stderr, "scale: --nodes: %v\n", err)
		return 2
	}
	switch cfg.TimingsName = *timings; *timings {
	case "lan":
		cfg.Timings = lanTimings()
	case "wan":
		cfg.Timings = wanTimings()
	default:
		fmt.Fprintf(stderr, "scale: --timings=%q: want lan or wan\n", *timings)
		return 2
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var rep *Report
	if *from != "" {
		if rep, err = mergeReports(strings.Split(*from, ",")); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	} else {
		rep = Sweep(ctx, cfg, stderr)
	}
	if *routerBench && *from == "" {
		root, err := harness.WorkspaceRoot()
		if err == nil {
			rep.Router, err = runRouterBenchmarks(ctx, root, stderr)
		}
		if err != nil {
			rep.RouterError = err.Error()
			fmt.Fprintln(stderr, err)
		}
	}
	if err := rep.write(*out); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var md strings.Builder
	rep.markdown(&md)
	fmt.Fprint(stdout, md.String())
	fmt.Fprintf(stdout, "\nwrote %s/results.json, %s/scale.md and the plots %s/scale-*.png\n", *out, *out, *out)
	return 0
}

// Sweep measures every size of cfg in turn, within cfg.MaxDuration, and fits the curves. A size
// that stops (formation failed or its time ran out) ends the sweep: the larger ones would too.
func Sweep(ctx context.Context, cfg Config, log io.Writer) *Report {
	rep := &Report{Timings: cfg.TimingsName, Routers: cfg.Routers, Models: cfg.Models, Adapters: cfg.Adapters,
		Busy: cfg.Busy, Target: cfg.Target, Network: cfg.Network, Latency: cfg.Latency.String(), Loss: cfg.Loss,
		Dilation: cfg.Dilation, DilatePer: cfg.DilatePer}
	start := time.Now()
	for i, n := range cfg.Nodes {
		if reason := sweepStop(ctx, start, cfg, rep); reason != "" {
			for _, rest := range cfg.Nodes[i:] {
				rep.Results = append(rep.Results, Result{Gateways: rest, Routers: cfg.Routers, Stopped: reason})
			}
			break
		}
		fmt.Fprintf(log, "[%d/%d] N=%d gateways + %d routers (%s elapsed)\n", i+1, len(cfg.Nodes), n, cfg.Routers,
			time.Since(start).Round(time.Second))
		res := runSize(ctx, cfg, n, log)
		rep.Results = append(rep.Results, res)
		if res.Stopped != "" {
			fmt.Fprintf(log, "  N=%d stopped: %s\n", n, res.Stopped)
		} else {
			fmt.Fprintf(log, "  N=%d: %.1f KB/s per node, every router p99 %.0f ms, heap %.2f MiB per node\n",
				n, res.SentPerNode/1000, res.AllP99, res.HeapPerNode/(1<<20))
		}
	}
	rep.fit()
	return rep
}

// sweepStop says why no further size starts, or "".
func sweepStop(ctx context.Context, start time.Time, cfg Config, rep *Report) string {
	switch {
	case ctx.Err() != nil:
		return "interrupted"
	case time.Since(start) >= cfg.MaxDuration:
		return fmt.Sprintf("max duration %v reached", cfg.MaxDuration)
	case len(rep.Results) > 0 && rep.Results[len(rep.Results)-1].Stopped != "":
		return fmt.Sprintf("N=%d stopped", rep.Results[len(rep.Results)-1].Gateways)
	}
	return ""
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
