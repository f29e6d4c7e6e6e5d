package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Quick sweep settings (--sweep --quick): a sanity pass that fits in minutes, not a result.
var (
	// QuickLoads are the quick sweep's two offered loads.
	QuickLoads = []float64{0.5, 0.9}
	// QuickSeeds is the quick sweep's report seeds per (scenario, load).
	QuickSeeds = 2
	// QuickSweepDuration is the quick sweep's arrivals per cell (simulated).
	QuickSweepDuration = 5 * time.Second
	// QuickSensitivitySeeds is the quick sweep's tuning seeds for the sensitivity table.
	QuickSensitivitySeeds = 1
)

// sweepFlags are the flags only --sweep reads.
type sweepFlags struct {
	on, resume, oracle, sensitivity bool
	scenarios, loads                string
	seeds, sensitivitySeeds         int
	sloTTFT, sloITL                 time.Duration
}

func addSweepFlags(fs *flag.FlagSet) *sweepFlags {
	d := DefaultSweepConfig()
	f := &sweepFlags{}
	fs.BoolVar(
		&f.on,
		"sweep",
		false,
		"run the load sweep: every Tier 1 scenario at every --loads, on --seeds report seeds (results in OUT/sweep)",
	)
	fs.StringVar(
		&f.scenarios,
		"scenarios",
		"",
		"sweep: scenarios, comma-separated (default every Tier 1 scenario with a load)",
	)
	fs.StringVar(
		&f.loads,
		"loads",
		joinFloats(d.Loads),
		"sweep: offered loads, fractions of the fleet capacity (a burst's load for on/off workloads)",
	)
	fs.IntVar(&f.seeds, "seeds", d.Seeds, "sweep: report seeds per scenario and load")
	fs.DurationVar(&f.sloTTFT, "slo-ttft", d.SLO.TTFT, "sweep: goodput's TTFT bound (simulated time)")
	fs.DurationVar(
		&f.sloITL,
		"slo-itl",
		d.SLO.TPOT,
		"sweep: goodput's bound on a request's mean inter-token latency (simulated time)",
	)
	fs.BoolVar(&f.resume, "resume", d.Resume, "sweep: skip cells whose results file exists and matches the configuration")
	fs.BoolVar(&f.oracle, "oracle", d.Oracle, "sweep: replay every cell's requests in the simulated oracle as a reference")
	fs.BoolVar(
		&f.sensitivity,
		"sensitivity",
		d.Sensitivity.Enabled,
		"sweep: the default profile's weight-sensitivity table ("+d.Sensitivity.Scenario+", load "+strconv.FormatFloat(
			d.Sensitivity.Load,
			'g',
			-1,
			64,
		)+", tuning seeds)",
	)
	fs.IntVar(
		&f.sensitivitySeeds,
		"sensitivity-seeds",
		d.Sensitivity.Seeds,
		"sweep: tuning seeds of the sensitivity table",
	)
	return f
}

// sweepConfig builds the sweep's settings from the parsed flags; base carries the bench flags
// shared with single runs (policies, duration, time scale, physics, ...).
func (f *sweepFlags) sweepConfig(fs *flag.FlagSet, base Config, quick bool) (SweepConfig, error) {
	cfg := DefaultSweepConfig()
	cfg.Bench = base
	cfg.Out = filepath.Join(base.Out, "sweep")
	cfg.Seeds, cfg.Resume, cfg.Oracle = f.seeds, f.resume, f.oracle
	cfg.SLO.TTFT, cfg.SLO.TPOT = f.sloTTFT, f.sloITL
	cfg.Sensitivity.Enabled, cfg.Sensitivity.Seeds = f.sensitivity, f.sensitivitySeeds
	if quick {
		cfg.Loads = QuickLoads
		if !flagSet(fs, "seeds") {
			cfg.Seeds = QuickSeeds
		}
		if !flagSet(fs, "duration") {
			cfg.Bench.Duration = QuickSweepDuration
		}
		if !flagSet(fs, "sensitivity-seeds") {
			cfg.Sensitivity.Seeds = QuickSensitivitySeeds
		}
	}
	if !quick || flagSet(fs, "loads") {
		loads, err := parseFloats(f.loads)
		if err != nil {
			return cfg, fmt.Errorf("bench: --loads: %w", err)
		}
		cfg.Loads = loads
	}
	if f.scenarios != "" {
		cfg.Scenarios = nil
		for name := range strings.SplitSeq(f.scenarios, ",") {
			sc, err := Lookup(strings.TrimSpace(name))
			if err != nil {
				return cfg, err
			}
			cfg.Scenarios = append(cfg.Scenarios, sc)
		}
	}
	if base.Capacity > 0 {
		return cfg, fmt.Errorf("bench: --capacity: a sweep measures every scenario's capacity")
	}
	return cfg, nil
}

// runSweepCLI runs the sweep and prints its one-page summary.
func runSweepCLI(ctx context.Context, cfg SweepConfig, binDir string, stdout, stderr io.Writer) int {
	bin, cleanup, err := GatewayBinary(binDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer cleanup()
	cfg.Bench.GatewayBin, cfg.Progress = bin, stderr
	cfg.Bench.Progress = nil // the sweep's bar instead of loadgen's lines
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	res, err := RunSweep(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(
		stderr,
		"sweep: %d cells measured, %d resumed; files: %s\n",
		res.Ran,
		res.Resumed,
		strings.Join(res.Files, ", "),
	)
	md, err := os.ReadFile(filepath.Join(cfg.Out, "sweep.md"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	_, _ = stdout.Write(md)
	return 0
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for part := range strings.SplitSeq(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func joinFloats(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// validateFlags is Validate before the gateway binary is known.
func (c *SweepConfig) validateFlags() error {
	v := *c
	v.Bench.GatewayBin = "(not yet built)"
	return v.Validate()
}
