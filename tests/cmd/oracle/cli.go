package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// options are the command's flags.
type options struct {
	workload string
	fleet    string
	duration time.Duration
	seed     uint64
	rate     float64
	capacity float64
	maxLoras int
	baseline string
	regions  string
	rtt      string
	json     string
}

// errUsage marks bad flags (exit code 2).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("oracle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.workload, "workload", "mixed-fleet", "embedded workload name or YAML file")
	fs.StringVar(&o.fleet, "fleet", "h100x4,a10gx4", "pods as PROFILExCOUNT items, e.g. h100x4,a10gx4")
	fs.DurationVar(&o.duration, "duration", 0, "arrivals span (0: the workload's, 60s by default)")
	fs.Uint64Var(&o.seed, "seed", 0, "request sequence seed (0: the workload's)")
	fs.Float64Var(&o.rate, "rate", 0, "mean arrival rate in req/s (0: the workload's)")
	fs.Float64Var(&o.capacity, "capacity", 0, "fleet capacity in req/s; the rate becomes the workload's load x capacity")
	fs.IntVar(&o.maxLoras, "max-loras", 0, "adapter slots per pod; > 0 serves the workload's adapters")
	fs.StringVar(
		&o.baseline,
		"baseline",
		"round-robin",
		"simulated baseline beside the oracle: round-robin, local-oracle (the oracle kept in each client's region; needs --regions) or none",
	)
	fs.StringVar(
		&o.regions,
		"regions",
		"",
		"place the fleet's pods in regions, in order, as REGION=PODS items (e.g. us-east-1=2,us-west-2=2); requests then go to pods anywhere at --rtt's round trips",
	)
	fs.StringVar(
		&o.rtt,
		"rtt",
		"",
		"round trips between regions as REGION/REGION=DURATION items (e.g. us-east-1/us-west-2=70ms); every pair of --regions needs one",
	)
	fs.StringVar(&o.json, "json", "", "also write the full report (every request) as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	case o.rate != 0 && o.capacity != 0:
		return nil, fmt.Errorf("%w: --rate and --capacity are exclusive", errUsage)
	case o.baseline != "round-robin" && o.baseline != "local-oracle" && o.baseline != "none":
		return nil, fmt.Errorf("%w: --baseline=%q must be round-robin, local-oracle or none", errUsage, o.baseline)
	case o.baseline == "local-oracle" && o.regions == "":
		return nil, fmt.Errorf("%w: --baseline=local-oracle needs --regions", errUsage)
	case o.rtt != "" && o.regions == "":
		return nil, fmt.Errorf("%w: --rtt needs --regions", errUsage)
	}
	return o, nil
}

// run performs one invocation and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = replayAndReport(ctx, o, stdout)
	}
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "oracle:", err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "oracle:", err)
		return 1
	}
	return 0
}

// loadWorkload applies the overrides and generates the request sequence.
func loadWorkload(o *options) (*workload.Workload, uint64, []workload.Request, error) {
	w, err := workload.Load(o.workload)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	steps := []struct {
		on    bool
		apply func(*workload.Workload) (*workload.Workload, error)
	}{
		{o.rate != 0, func(w *workload.Workload) (*workload.Workload, error) { return w.WithRate(o.rate) }},
		{o.capacity != 0, func(w *workload.Workload) (*workload.Workload, error) { return w.WithCapacity(o.capacity) }},
		{o.duration != 0, func(w *workload.Workload) (*workload.Workload, error) { return w.WithDuration(o.duration) }},
	}
	for _, s := range steps {
		if s.on {
			if w, err = s.apply(w); err != nil {
				return nil, 0, nil, fmt.Errorf("%w: %w", errUsage, err)
			}
		}
	}
	seed := o.seed
	if seed == 0 {
		seed = w.Seed
	}
	reqs, err := workload.Generate(w, seed)
	if err != nil {
		return nil, 0, nil, err
	}
	return w, seed, reqs, nil
}

// outcome is one policy's replay.
type outcome struct {
	Policy  string         `json:"policy"`
	Wall    time.Duration  `json:"replay_wall_ns"`
	Summary oracle.Summary `json:"summary"`
	Report  *oracle.Report `json:"report"`
}

// output is the JSON file's content.
type output struct {
	Workload string        `json:"workload"`
	Seed     uint64        `json:"seed"`
	Rate     float64       `json:"rate"`
	Duration time.Duration `json:"duration_ns"`
	Fleet    []string      `json:"fleet"`
	// Regions and PodRegions place the fleet with --regions (each pod's region, in fleet order).
	Regions    []string  `json:"regions,omitempty"`
	PodRegions []string  `json:"pod_regions,omitempty"`
	MaxLoras   int       `json:"max_loras"`
	Policies   []outcome `json:"policies"`
}

func replayAndReport(ctx context.Context, o *options, stdout io.Writer) error {
	pods, err := oracle.ParseFleet(o.fleet)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	w, seed, reqs, err := loadWorkload(o)
	if err != nil {
		return err
	}
	if len(w.Adapters) > 0 && o.maxLoras == 0 {
		return fmt.Errorf("%w: workload %s names adapters: set --max-loras", errUsage, w.Name)
	}
	var topo *topology
	if o.regions != "" {
		if topo, err = parseTopology(o.regions, o.rtt, len(pods)); err == nil {
			err = topo.check(reqs)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	out := output{
		Workload: w.Name,
		Seed:     seed,
		Rate:     w.MeanRate(),
		Duration: w.Duration,
		Fleet:    pods,
		MaxLoras: o.maxLoras,
	}
	if topo != nil {
		out.Regions, out.PodRegions = topo.regions, topo.podRegion
	}
	policies := []string{"oracle"}
	if o.baseline != "none" {
		policies = append(policies, o.baseline)
	}
	for _, name := range policies {
		cfg := oracle.DefaultConfig()
		cfg.Profiles, cfg.MaxLoras = pods, o.maxLoras
		switch {
		case name == "round-robin" && topo != nil:
			cfg.Assign = topo.roundRobin(reqs)
		case name == "round-robin":
			cfg.Assign = func(i int) int { return i % len(pods) }
		}
		if topo != nil {
			cfg.Network = topo.oracleRegions().Network(name != "oracle")
		}
		start := time.Now()
		rep, err := oracle.Replay(ctx, cfg, w, reqs)
		if err != nil {
			return fmt.Errorf("replay %s: %w", name, err)
		}
		out.Policies = append(
			out.Policies,
			outcome{Policy: name, Wall: time.Since(start), Summary: rep.Summary(), Report: rep},
		)
	}
	writeText(stdout, &out, o)
	if o.json != "" {
		return writeJSON(o.json, &out)
	}
	return nil
}

func writeJSON(path string, out *output) error {
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
