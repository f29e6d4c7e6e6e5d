package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
)

// Main runs the bench command with args (without the program name) and returns its exit code:
// 0 when the run completed (a missed target is a measurement, not a failure), 2 for bad flags,
// 1 for anything else.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := DefaultConfig()
	scenario := fs.String("scenario", "", "scenario: "+strings.Join(names(), ", "))
	fs.DurationVar(&cfg.Duration, "duration", 0, "arrivals in simulated time (default: the workload's, 60s)")
	fs.Float64Var(&cfg.Capacity, "capacity", 0, "fleet capacity in req/s (default: measured with modelsim's simulator)")
	fs.Float64Var(
		&cfg.TimeScale,
		"time-scale",
		cfg.TimeScale,
		"modelsim --time-scale; rates, bursts and the gateway's scrape interval are scaled with it",
	)
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for the reports")
	policies := fs.String(
		"policies",
		strings.Join(cfg.Policies, ","),
		"gateway profiles compared, comma-separated (Tier 2 scenarios: router modes, default "+strings.Join(
			RouterModes,
			",",
		)+")",
	)
	binDir := fs.String("bin-dir", "", "directory holding cluster-gateway (default: build it)")
	measure := fs.Bool("measure-capacity", false, "print each profile's capacity for the scenario's workload and exit")
	progress := fs.Bool("progress", true, "loadgen progress lines on stderr")
	fs.StringVar(
		&cfg.LogLevel,
		"log-level",
		cfg.LogLevel,
		"--log-level of the gateways and routers started (debug logs every routing decision)",
	)
	fs.IntVar(
		&cfg.Repeat,
		"repeat",
		cfg.Repeat,
		"Tier 2 scenarios: runs of the request sequence, each on fresh stacks, pooled into one report",
	)
	fs.StringVar(
		&cfg.TracePath,
		"trace",
		"",
		"trace scenarios: the trace file (default: the scenario's, ../shared/traces/FILE from the repository root)",
	)
	fs.StringVar(&cfg.TraceDir, "trace-dir", "", "trace scenarios: a directory holding the trace under its own file name")
	quick := fs.Bool(
		"quick",
		false,
		"the scenario's quick run: "+quickDuration.String()+" of arrivals (trace scenarios: their own short window)",
	)
	family := fs.String("physics", string(cfg.Physics.Family), "every pod's modelsim --physics: "+familyNames())
	fs.Float64Var(
		&cfg.Physics.Jitter,
		"physics-jitter",
		cfg.Physics.Jitter,
		"every pod's modelsim --physics-jitter (-1 = the family's)",
	)
	fs.BoolVar(
		&cfg.ReportCachedTokens,
		"report-cached-tokens",
		cfg.ReportCachedTokens,
		"every pod's modelsim --report-cached-tokens",
	)
	fs.Uint64Var(&cfg.Seed, "seed", 0, "the request sequence's seed (default: the workload's own)")
	sw := addSweepFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	f, err := physics.ParseFamily(*family)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg.Physics.Family = f
	if err := cfg.Physics.Validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg.Policies = strings.Split(*policies, ",")
	if sw.on {
		if *scenario != "" {
			fmt.Fprintln(stderr, "bench: --sweep takes --scenarios, not --scenario")
			return 2
		}
		scfg, err := sw.sweepConfig(fs, cfg, *quick)
		if err == nil {
			err = scfg.validateFlags()
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		return runSweepCLI(ctx, scfg, *binDir, stdout, stderr)
	}
	sc, err := Lookup(*scenario)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if !repeatValid(cfg.Repeat, sc) {
		fmt.Fprintf(stderr, "bench: --repeat=%d: want 1 or more, and 1 for a Tier 1 scenario\n", cfg.Repeat)
		return 2
	}
	cfg.Scenario = sc
	if *quick && !flagSet(fs, "duration") {
		cfg.Duration = sc.quick()
	}
	if sc.Regional() && !flagSet(fs, "policies") {
		cfg.Policies = RouterModes
	}
	if len(sc.Policies) > 0 && !flagSet(fs, "policies") {
		cfg.Policies = sc.Policies
	}
	if *measure {
		return printCapacity(ctx, &cfg, stdout, stderr)
	}
	if *progress {
		cfg.Progress = stderr
	}
	bin, cleanup, err := GatewayBinary(*binDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer cleanup()
	cfg.GatewayBin = bin
	if sc.Regional() {
		rbin, rcleanup, err := RouterBinary(*binDir)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer rcleanup()
		cfg.RouterBin = rbin
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	md, err := Markdown(&cfg, res)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	_, _ = stdout.Write(md)
	return 0
}

// flagSet reports whether name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func familyNames() string {
	var out []string
	for _, f := range physics.Families() {
		out = append(out, string(f))
	}
	return strings.Join(out, ", ")
}

func names() []string {
	var out []string
	for _, s := range scenarios {
		out = append(out, s.Name)
	}
	return out
}

// printCapacity measures and prints the capacity search of each profile in sc's fleet.
func printCapacity(ctx context.Context, cfg *Config, stdout, stderr io.Writer) int {
	sc, pc := cfg.Scenario, cfg.Physics
	w, err := workload.Load(sc.Workload)
	if err == nil {
		w, err = applyTraceFile(cfg, w)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	cc := DefaultCapacityConfig()
	cc.MaxLoras, cc.Physics = sc.MaxLoras, pc
	var total float64
	for _, p := range sc.allPools() {
		start := time.Now()
		c, probes, err := MeasureCapacity(ctx, w, p.Profile, cc)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		for _, pr := range probes {
			fmt.Fprintf(
				stdout,
				"  %s %s rate %.3f req/s: mean waiting %.2f sustained=%v",
				sc.Workload,
				p.Profile,
				pr.Rate,
				pr.MeanWaiting,
				pr.Sustained,
			)
			if pr.TooLong > 0 {
				fmt.Fprintf(stdout, " (%d requests too long for the KV cache left out)", pr.TooLong)
			}
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(
			stdout,
			"%s %s: %.2f req/s per pod (%d probes, %s)\n",
			sc.Workload,
			p.Profile,
			c,
			len(probes),
			time.Since(start).Round(time.Millisecond),
		)
		total += float64(p.Count) * c
	}
	if w.IsTrace() {
		fmt.Fprintf(
			stdout,
			"%s fleet (%s): %.2f req/s; round robin sustains %d × the slowest pod's; the trace at %g× its recorded rate\n",
			sc.Name,
			pools(sc),
			total,
			sc.Pods(),
			w.Trace.TimeScale,
		)
		return 0
	}
	fmt.Fprintf(
		stdout,
		"%s fleet (%s): %.2f req/s; load %.3f gives %.2f req/s\n",
		sc.Name,
		pools(sc),
		total,
		w.Load,
		w.Load*total,
	)
	return 0
}
