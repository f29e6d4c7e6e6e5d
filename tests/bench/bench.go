// Package bench is Tier 1's routing-quality benchmark: for one scenario it starts, per gateway
// policy, an identical modelsim fleet (in process, same seeds) behind its own cluster-gateway
// process with that --profile, sends every policy the same loadgen request sequence, interleaved,
// and writes the loadgen report (JSON, markdown, TTFT CDF) plus per-pod figures and the scenario's
// target verdict.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// Config is one benchmark run's settings.
type Config struct {
	// Scenario is what to run (see Lookup).
	Scenario Scenario
	// Policies are the gateway profiles compared; each is one loadgen target of that name. Tier 2
	// scenarios compare global-router modes (RouterModes) instead.
	Policies []string
	// Duration is how long arrivals are sent, in simulated time (0 = the workload's, 60 s).
	Duration time.Duration
	// Capacity is the fleet capacity in req/s (simulated time) of the workload's shape; 0 measures
	// it with MeasureCapacity for every pool's profile.
	Capacity float64
	// TimeScale is modelsim's --time-scale: one simulated second lasts TimeScale real seconds.
	// Arrival rates, burst timing and the gateway's scrape interval and staleness are scaled with it
	// so the benchmark is the same in simulated time.
	TimeScale float64
	// ScrapeInterval is the gateway's metrics scrape interval in simulated time (the gateway's
	// default, 50 ms).
	ScrapeInterval time.Duration
	// GatewayBin is the cluster-gateway executable (required).
	GatewayBin string
	// RouterBin is the global-router executable (required by Tier 2 scenarios).
	RouterBin string
	// TracePath replaces a trace scenario's trace file; TraceDir is a directory holding it
	// under its own file name (the scenarios name ../shared/traces/FILE from the repository root).
	TracePath, TraceDir string
	// Out is the directory the reports go to; LogDir the gateway logs (default Out/logs).
	Out, LogDir string
	// Repeat runs a Tier 2 scenario's request sequence this many times, each on fresh stacks, and
	// pools what they measured (default 1): the figures then rest on Repeat times the requests,
	// and one run's baseline, which moves with the machine, weighs less. Tier 1 scenarios take 1.
	Repeat int
	// LogLevel is the --log-level of the gateways and routers the bench starts (default warn;
	// debug logs, among others, every router's routing decisions).
	LogLevel string
	// Progress receives loadgen's progress lines (nil = none).
	Progress io.Writer
	// Logger receives the fleets' logs (step-lag warnings); default LogDir/NAME-modelsim.log.
	Logger *slog.Logger
	// Physics is every pod's step-time model (modelsim --physics, --physics-jitter); the capacity
	// measurement uses it too.
	Physics physics.Config
	// ReportCachedTokens is every pod's --report-cached-tokens.
	ReportCachedTokens bool
	// Seed replaces the workload's request-sequence seed (0 = the workload's own; the fleet
	// capacity is measured with the workload's own seed either way).
	Seed uint64
	// Load, when > 0, replaces the workload's offered load: the busiest phase of its arrivals
	// (the whole run for Poisson, a burst for on/off) runs at Load × the fleet capacity (see
	// OfferedLoad). Trace scenarios take 0.
	Load float64
	// SLO, when set, replaces the workload's goodput objective (simulated time).
	SLO *workload.SLO
	// SLOHeaders, when set, replace the workload's slo_headers: shares of the requests that
	// carry latency objectives (simulated time) as request headers, for the gateway's slo-filter;
	// goodput judges those requests by them.
	SLOHeaders []workload.SLOClass
	// PolicyConfigs maps a policy to a GIE EndpointPickerConfig file its gateway runs with
	// (--config=FILE) instead of --profile=POLICY: a policy not named here is a built-in profile.
	PolicyConfigs map[string]string
	// Sessions gives a Mooncake trace scenario's requests their conversation's session id (the
	// workload's trace.sessions), sent as the body's user, for session affinity.
	Sessions bool
	// TraceStart, when > 0, replaces a trace scenario's window start (recorded time): another
	// window of the trace, where a seed would give another request sequence.
	TraceStart time.Duration

	// weights are the pods' weights per GPU profile (podWeights); nil: pods carry no weight label.
	weights map[string]float64
}

// repeatValid reports whether runs of sc's request sequence can be pooled n times: at least
// once, and only once for a Tier 1 scenario.
func repeatValid(n int, sc Scenario) bool { return n == 1 || n > 1 && sc.Regional() }

// DefaultConfig returns the settings of `bench --scenario=NAME` with every default set.
func DefaultConfig() Config {
	return Config{
		Policies:       Policies,
		TimeScale:      1,                     // real time: the gateway's timers are real time too
		ScrapeInterval: 50 * time.Millisecond, // the gateway's default
		Out:            "bench-results",
		LogLevel:       "warn",
		Repeat:         1,
		Physics:        physics.DefaultConfig(), // modelsim's linear model
		// Pods report usage.prompt_tokens_details.cached_tokens, as modelsim does by default.
		ReportCachedTokens: true,
	}
}

// Validate reports the first unusable field.
func (c *Config) Validate() error {
	switch {
	case c.Scenario.Name == "" || c.Scenario.Workload == "" || c.Scenario.Pods() == 0:
		return errors.New("bench: scenario: required (name, workload, pods)")
	case len(c.Policies) == 0:
		return errors.New("bench: policies: at least one required")
	case !(c.TimeScale > 0):
		return fmt.Errorf("bench: time scale: must be > 0, got %v", c.TimeScale)
	case c.ScrapeInterval <= 0:
		return fmt.Errorf("bench: scrape interval: must be > 0, got %v", c.ScrapeInterval)
	case c.Duration < 0 || c.Capacity < 0:
		return errors.New("bench: duration and capacity must be >= 0")
	case c.Repeat != 0 && !repeatValid(c.Repeat, c.Scenario):
		return fmt.Errorf("bench: repeat: %d; want 1 or more, and 1 for a Tier 1 scenario", c.Repeat)
	case c.GatewayBin == "":
		return errors.New("bench: gateway binary: required")
	case c.Scenario.Regional() && c.RouterBin == "":
		return errors.New("bench: router binary: required by a Tier 2 scenario")
	case c.Out == "":
		return errors.New("bench: out: required")
	case c.Load < 0 || c.Load > maxLoad:
		return fmt.Errorf("bench: load: must be in [0, %g], got %v", maxLoad, c.Load)
	}
	if err := c.Physics.Validate(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// Result is what one run measured.
type Result struct {
	Figures
	// Capacity is the fleet capacity used (req/s, simulated time); PodCapacity per profile.
	Capacity    float64            `json:"capacity_rps"`
	PodCapacity map[string]float64 `json:"pod_capacity_rps,omitempty"`
	// RateRPS is the mean arrival rate in simulated req/s; TimeScale modelsim's time scale.
	RateRPS   float64 `json:"rate_rps"`
	TimeScale float64 `json:"time_scale"`
	// Repeat is how many runs of the sequence the figures pool (Config.Repeat, at least 1).
	Repeat int `json:"repeat"`
	// PodWeights are the weights the gateways' weighted baselines read from each pod's label
	// switchyard.dev/weight, per GPU profile: the capacity per pod (PodCapacity, measured for the
	// weights when the fleet capacity was given). Empty when no weighted baseline ran and no
	// capacity was measured.
	PodWeights map[string]float64 `json:"pod_weights,omitempty"`
	// Physics describes the pods' step-time model and cached-token reporting when they are not
	// modelsim's defaults (empty otherwise), e.g. "physics attention, step jitter σ 0.1".
	Physics string `json:"physics,omitempty"`
	// Target and Verdict state the scenario's target and whether the default profile met it.
	Target  string   `json:"target,omitempty"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Trace describes a trace scenario's replay and its offered load (trace scenarios only).
	Trace *TraceFigures `json:"trace,omitempty"`
	// LoadAvg is the machine's 1-minute load average at the start and at the end of the run
	// (Linux; empty elsewhere): the figures are only as good as the CPU the simulation got.
	LoadAvg [2]string `json:"load_avg"`
	// Files are the report files written.
	Files report.Files `json:"-"`
	// Samples are loadgen's raw samples, written to NAME-samples.csv.
	Samples *loadgen.Result `json:"-"`
}

// Run executes cfg's scenario and writes its reports into cfg.Out.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LogDir == "" {
		cfg.LogDir = filepath.Join(cfg.Out, "logs")
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if cfg.Logger == nil {
		f, err := os.Create(filepath.Join(cfg.LogDir, cfg.Scenario.Name+"-modelsim.log"))
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		cfg.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	res := &Result{TimeScale: cfg.TimeScale, Repeat: max(cfg.Repeat, 1), Physics: physicsNote(&cfg)}
	res.LoadAvg[0] = loadAvg()
	sim, err := prepareWorkload(ctx, &cfg, res)
	if err != nil {
		return nil, err
	}
	w, err := scaleTime(sim, cfg.TimeScale)
	if err != nil {
		return nil, err
	}
	if cfg.Scenario.Regional() {
		if err := runRegional(ctx, &cfg, sim, w, res); err != nil {
			return nil, err
		}
		if cfg.Scenario.Check != nil {
			v := cfg.Scenario.Check(res.Figures)
			res.Target, res.Verdict = cfg.Scenario.Target, &v
		}
		return res, writeReports(&cfg, res)
	}
	if err := podWeights(ctx, &cfg, sim, res); err != nil {
		return nil, err
	}
	stacks, err := startStacks(ctx, &cfg, w)
	defer closeStacks(stacks, cfg.Logger)
	if err != nil {
		return nil, err
	}
	lcfg := loadgen.DefaultConfig()
	lcfg.Workload, lcfg.Progress = w, cfg.Progress
	targets := make([]loadgen.Target, len(stacks))
	for i, st := range stacks {
		targets[i] = loadgen.Target{Name: st.policy, URL: st.url}
	}
	peaks := make([]*kvPeaks, len(stacks))
	for i, st := range stacks {
		peaks[i] = st.sampleKV(ctx, cfg.TimeScale)
	}
	lres, err := loadgen.Run(ctx, lcfg, targets)
	kv := make([][]float64, len(stacks))
	for i := range peaks {
		kv[i] = peaks[i].finish()
	}
	res.LoadAvg[1] = loadAvg()
	if err != nil {
		return nil, fmt.Errorf("bench: loadgen: %w", err)
	}
	rep, err := report.Summarize(lres, "")
	if err != nil {
		return nil, err
	}
	res.Report, res.Samples = rep, lres
	res.Affinity = groupAffinity(sim, lres)
	for i, st := range stacks {
		res.Policies = append(res.Policies, st.podStats(rep.Targets[i].EndpointShare, kv[i]))
	}
	if cfg.Scenario.Check != nil && res.has(cfg.Scenario.baseline()) {
		v := cfg.Scenario.Check(res.Figures)
		res.Target, res.Verdict = cfg.Scenario.Target, &v
	}
	return res, writeReports(&cfg, res)
}

// prepareWorkload loads the scenario's workload and sets its rate from the fleet capacity; its
// timing is still simulated time (scaleTime gives the real-time one loadgen sends).
func prepareWorkload(ctx context.Context, cfg *Config, res *Result) (*workload.Workload, error) {
	w, err := cfg.Scenario.loadWorkload()
	if err != nil {
		return nil, err
	}
	if w, err = applyTraceFile(cfg, w); err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		if w, err = w.WithDuration(cfg.Duration); err != nil {
			return nil, err
		}
	}
	if cfg.SLO != nil {
		if w, err = w.WithSLO(*cfg.SLO); err != nil {
			return nil, fmt.Errorf("bench: slo: %w", err)
		}
	}
	if len(cfg.SLOHeaders) > 0 {
		if w, err = w.WithSLOHeaders(cfg.SLOHeaders); err != nil {
			return nil, fmt.Errorf("bench: slo headers: %w", err)
		}
	}
	if w.IsTrace() {
		if cfg.Load > 0 || cfg.Seed != 0 {
			return nil, fmt.Errorf("bench: %s replays a trace: its rate and requests are the trace's (no load or seed)", w.Name)
		}
		if w, err = withTraceWindow(cfg, w); err != nil {
			return nil, err
		}
		return prepareTrace(ctx, cfg, res, w)
	}
	res.Capacity = cfg.Capacity
	if res.Capacity == 0 {
		if res.Capacity, res.PodCapacity, err = FleetCapacity(ctx, cfg.Scenario, w, cfg.Physics); err != nil {
			return nil, err
		}
	}
	if cfg.Load > 0 {
		if w, err = withOfferedLoad(w, cfg.Load); err != nil {
			return nil, err
		}
	}
	if cfg.Seed != 0 {
		w = w.Clone()
		w.Seed = cfg.Seed
	}
	if w, err = w.WithCapacity(res.Capacity); err != nil {
		return nil, err
	}
	res.RateRPS = w.MeanRate()
	return w, nil
}

// FleetCapacity measures each pool profile's capacity for w's shape under physics pc and sums it
// over the fleet.
func FleetCapacity(
	ctx context.Context,
	sc Scenario,
	w *workload.Workload,
	pc physics.Config,
) (float64, map[string]float64, error) {
	cc := DefaultCapacityConfig()
	cc.MaxLoras, cc.Physics = sc.MaxLoras, pc
	per := map[string]float64{}
	var total float64
	for _, p := range sc.allPools() {
		c, ok := per[p.Profile]
		if !ok {
			var err error
			if c, _, err = MeasureCapacity(ctx, w, p.Profile, cc); err != nil {
				return 0, nil, err
			}
			per[p.Profile] = c
		}
		total += float64(p.Count) * c
	}
	return total, per, nil
}

// WeightedPolicies are the gateway profiles that weigh pods by their label switchyard.dev/weight.
var WeightedPolicies = []string{"weighted-round-robin", "p2c", "leastconn"}

// podWeights sets the weight every pod is labelled with, per GPU profile, as an operator would:
// the pod's measured capacity for the workload's shape (the capacity search's, run for the
// weights alone when the fleet capacity was given and a weighted baseline runs).
func podWeights(ctx context.Context, cfg *Config, w *workload.Workload, res *Result) error {
	cfg.weights = res.PodCapacity
	if len(cfg.weights) == 0 &&
		slices.ContainsFunc(cfg.Policies, func(p string) bool { return slices.Contains(WeightedPolicies, p) }) {
		var err error
		if _, cfg.weights, err = FleetCapacity(ctx, cfg.Scenario, w, cfg.Physics); err != nil {
			return fmt.Errorf("bench: pod weights: %w", err)
		}
	}
	res.PodWeights = cfg.weights
	return nil
}

// scaleTime turns a workload in simulated time into the real-time one loadgen sends.
func scaleTime(w *workload.Workload, ts float64) (*workload.Workload, error) {
	if ts == 1 {
		return w, nil
	}
	c := w.Clone()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * ts) }
	c.Duration = scale(c.Duration)
	scaleArrival := func(a *workload.Arrival) {
		a.Rate /= ts
		a.BurstLength, a.Period = scale(a.BurstLength), scale(a.Period)
	}
	if c.Arrival != nil {
		scaleArrival(c.Arrival)
	}
	if c.Trace != nil {
		scaleTrace(c, ts)
	}
	if c.SLO != nil { // Clone copied the SLO
		c.SLO.TTFT, c.SLO.TPOT = scale(c.SLO.TTFT), scale(c.SLO.TPOT)
	}
	for i := range c.SLOHeaders { // Clone copied the classes
		c.SLOHeaders[i].TTFT, c.SLOHeaders[i].TPOT = scale(c.SLOHeaders[i].TTFT), scale(c.SLOHeaders[i].TPOT)
	}
	for i := range c.Regions { // Clone copied the regions: changing them leaves w alone
		scaleArrival(&c.Regions[i].Arrival)
	}
	return c, c.Validate()
}

func startStacks(ctx context.Context, cfg *Config, w *workload.Workload) ([]*stack, error) {
	var stacks []*stack
	for _, p := range cfg.Policies {
		st, err := startStack(ctx, cfg, cfg.Scenario, w, p)
		if err != nil {
			return stacks, fmt.Errorf("bench: start %s: %w", p, err)
		}
		stacks = append(stacks, st)
	}
	return stacks, nil
}

func closeStacks(stacks []*stack, logger *slog.Logger) {
	for _, st := range stacks {
		if err := st.close(); err != nil {
			logger.Warn("stop stack", "policy", st.policy, "err", err)
		}
	}
}

// loadAvg returns the 1-minute load average from /proc/loadavg ("" when unavailable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// logLevel is LogLevel, or warn when unset (a Config built without DefaultConfig).
func (c *Config) logLevel() string {
	if c.LogLevel == "" {
		return "warn"
	}
	return c.LogLevel
}

// podSettings gives every pod of a fleet the run's physics and cached-token reporting.
func (c *Config) podSettings(cfgs []server.Config) {
	for i := range cfgs {
		cfgs[i].Physics, cfgs[i].PhysicsJitter = string(c.Physics.Family), c.Physics.Jitter
		cfgs[i].ReportCachedTokens = c.ReportCachedTokens
	}
}
