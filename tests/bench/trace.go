package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TraceFigures describe a trace scenario's offered load against the fleet: the recorded rate is
// replayed TimeScale times faster, which is RateRPS, a fraction Load of the fleet's capacity for
// the trace's request mix and RoundRobinLoad of what round robin sustains (the pod count times
// the slowest pod's capacity: round robin gives every pod the same share).
type TraceFigures struct {
	// Format and File name the trace; Attribution is the citation its licence asks for.
	Format      string `json:"format"`
	File        string `json:"file"`
	Attribution string `json:"attribution"`
	// TimeScale is the replay's rate as a multiple of the recorded one (simulated time);
	// PromptScale and OutputScale the length factors; StartS where the window starts.
	TimeScale   float64 `json:"time_scale"`
	PromptScale float64 `json:"prompt_scale"`
	OutputScale float64 `json:"output_scale"`
	StartS      float64 `json:"start_s"`
	// Requests is the window's request count.
	Requests int `json:"requests"`
	// RoundRobinCapacity is the pod count times the slowest pod's capacity (req/s, simulated).
	RoundRobinCapacity float64 `json:"round_robin_capacity_rps"`
	// Load and RoundRobinLoad are the rate over the fleet's capacity and over round robin's.
	Load           float64 `json:"load"`
	RoundRobinLoad float64 `json:"round_robin_load"`
	// SLO is the goodput objective (simulated time).
	SLO *workload.SLO `json:"slo,omitempty"`
}

// applyTraceFile points a trace workload at the file cfg names: TracePath, or the trace's file
// name inside TraceDir.
func applyTraceFile(cfg *Config, w *workload.Workload) (*workload.Workload, error) {
	if !w.IsTrace() || (cfg.TracePath == "" && cfg.TraceDir == "") {
		return w, nil
	}
	path := cfg.TracePath
	if path == "" {
		path = filepath.Join(cfg.TraceDir, filepath.Base(w.Trace.Path))
	}
	return w.WithTrace(func(t *workload.Trace) { t.Path = path })
}

// withTraceWindow applies cfg's Sessions and TraceStart to a trace workload.
func withTraceWindow(cfg *Config, w *workload.Workload) (*workload.Workload, error) {
	if !cfg.Sessions && cfg.TraceStart <= 0 {
		return w, nil
	}
	return w.WithTrace(func(t *workload.Trace) {
		t.Sessions = t.Sessions || cfg.Sessions
		if cfg.TraceStart > 0 {
			t.Start = cfg.TraceStart
		}
	})
}

// prepareTrace reads a trace scenario's window (so a missing trace fails before anything
// starts), and measures the fleet's capacity for its requests unless cfg gives it.
func prepareTrace(ctx context.Context, cfg *Config, res *Result, w *workload.Workload) (*workload.Workload, error) {
	reqs, err := workload.Generate(w, w.Seed)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("bench: trace %s: no request in the window (start %s, %s at %g×)", w.Trace.File(),
			w.Trace.Start, w.Duration, w.Trace.TimeScale)
	}
	res.RateRPS = float64(len(reqs)) / w.Duration.Seconds()
	res.Capacity = cfg.Capacity
	if res.Capacity == 0 {
		if res.Capacity, res.PodCapacity, err = FleetCapacity(ctx, cfg.Scenario, w, cfg.Physics); err != nil {
			return nil, err
		}
	}
	t := w.Trace
	tf := &TraceFigures{
		Format: string(t.Format), File: filepath.Base(t.Path), Attribution: t.Format.Attribution(),
		TimeScale: t.TimeScale, PromptScale: t.PromptScale, OutputScale: t.OutputScale, StartS: t.Start.Seconds(),
		Requests: len(reqs), Load: res.RateRPS / res.Capacity, SLO: w.SLO,
	}
	if len(res.PodCapacity) > 0 {
		slowest := math.Inf(1)
		for _, c := range res.PodCapacity {
			slowest = min(slowest, c)
		}
		tf.RoundRobinCapacity = float64(cfg.Scenario.Pods()) * slowest
		tf.RoundRobinLoad = res.RateRPS / tf.RoundRobinCapacity
	}
	res.Trace = tf
	return w, nil
}

// scaleTrace is scaleTime for a trace workload's copy c: the replay is 1/ts times as fast in
// real time (scaleTime makes the SLO ts times as long).
func scaleTrace(c *workload.Workload, ts float64) { c.Trace.TimeScale /= ts }

// traceProbeRequests returns the requests of one capacity probe of a trace workload: the trace's
// requests from its window's start, in order, with Poisson arrivals at rate over span. It reads
// the trace again only when more requests are needed than pool holds.
type traceProbeRequests struct {
	w    *workload.Workload
	pool []workload.Request
	all  bool // pool holds every request from the window's start
}

func (p *traceProbeRequests) requests(rate float64, span time.Duration) ([]workload.Request, error) {
	rng := rand.New(rand.NewPCG(p.w.Seed, 0xca9ac17))
	var at []time.Duration
	for t := rng.ExpFloat64() / rate; t < span.Seconds(); t += rng.ExpFloat64() / rate {
		at = append(at, time.Duration(t*float64(time.Second)))
	}
	if len(at) > len(p.pool) && !p.all {
		c := p.w.Clone()
		c.Duration = time.Duration(math.MaxInt64)
		c.Trace.MaxRequests = 2 * len(at)
		pool, err := workload.Generate(c, c.Seed)
		if err != nil {
			return nil, err
		}
		p.pool, p.all = pool, len(pool) < c.Trace.MaxRequests
	}
	if len(at) > len(p.pool) {
		return nil, fmt.Errorf(
			"capacity %s: the trace holds %d requests from %s; a probe at %.2f req/s for %s needs %d (give --capacity)",
			p.w.Name,
			len(p.pool),
			p.w.Trace.Start,
			rate,
			span,
			len(at),
		)
	}
	out := make([]workload.Request, len(at))
	for i := range at {
		out[i] = p.pool[i]
		out[i].At = at[i]
	}
	return out, nil
}

// traceLines writes a trace scenario's replay settings and offered load for the markdown header.
func traceLines(b *strings.Builder, pods int, res *Result) {
	t := res.Trace
	if t == nil {
		return
	}
	fmt.Fprintf(
		b,
		"Trace replay: %s `%s` from %gs of the recording, **time-scale factor %g×** the recorded rate (simulated time)",
		t.Format,
		t.File,
		t.StartS,
		t.TimeScale,
	)
	if t.PromptScale != 1 || t.OutputScale != 1 {
		fmt.Fprintf(b, ", prompts × %g, outputs × %g", t.PromptScale, t.OutputScale)
	}
	fmt.Fprintf(b, ": %d requests, %.2f req/s offered = %.0f%% of the fleet's capacity for this request mix (%.2f req/s)",
		t.Requests, res.RateRPS, 100*t.Load, res.Capacity)
	if t.RoundRobinCapacity > 0 {
		fmt.Fprintf(b, " and %.0f%% of what round robin sustains (%d pods × the slowest pod's %.2f req/s = %.2f req/s)",
			100*t.RoundRobinLoad, pods, t.RoundRobinCapacity/float64(pods), t.RoundRobinCapacity)
	}
	fmt.Fprintf(b, ". Trace: %s.\n\n", t.Attribution)
}

// traceTable writes a trace scenario's figures per policy: goodput at the SLO, TTFT and ITL
// percentiles, errors and the prefix-cache hit ratio.
func traceTable(b *strings.Builder, res *Result) {
	r := res.Report
	if slo := res.Trace.SLO; slo != nil {
		fmt.Fprintf(
			b,
			"Goodput counts the requests that succeeded with TTFT ≤ %s and time per output token ≤ %s (simulated time).\n\n",
			slo.TTFT,
			slo.TPOT,
		)
	}
	b.WriteString(
		"| policy | goodput req/s | within SLO | TTFT P50 | P95 | P99 | ITL P50 | P95 | P99 | TTFT P95 / RR | errors | hit " +
			"rate |\n",
	)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		good, share := "-", "-"
		if g := t.Goodput; g != nil {
			good, share = fmt.Sprintf("%.2f", float64(g.PerS)*res.TimeScale), fmt.Sprintf("%.1f%%", 100*float64(g.Fraction))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d%s | %.1f%% |\n", t.Name, good, share,
			t.TTFTMs.P50, t.TTFTMs.P95, t.TTFTMs.P99, t.ITLMs.P50, t.ITLMs.P95, t.ITLMs.P99,
			t.Ratios["ttft_p95"], t.Errors, errorKinds(t.ErrorsByKind), 100*float64(t.PrefixCacheHitRate))
	}
}

// errorKinds lists a target's errors by kind, " (kind n, ...)", or "" without errors.
func errorKinds(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	f := make(map[string]float64, len(m))
	for k, v := range m {
		f[k] = float64(v)
	}
	return " (" + counts(f) + ")"
}

// The trace scenarios: a real trace on the mixed fleet, every policy side by side.
var (
	traceConversation = Scenario{
		Name: "trace-conversation", Workload: "trace-conversation",
		Pools: []Pool{{"h100", 4}, {"a10g", 4}}, Quick: 30 * time.Second,
		Target: "default goodput at the SLO >= round robin's and the best baseline's",
		Check:  checkTraceGoodput,
	}
	traceAzureConv = Scenario{
		Name: "trace-azure-conv", Workload: "trace-azure-conv",
		Pools: []Pool{{"h100", 4}, {"a10g", 4}}, Quick: 30 * time.Second,
		Target: "default goodput at the SLO >= round robin's and the best baseline's",
		Check:  checkTraceGoodput,
	}
)

// checkTraceGoodput compares the default profile's goodput with round robin's and the best
// baseline's.
func checkTraceGoodput(f Figures) Verdict {
	d, rr := f.Goodput(Shipped), f.Goodput(Baseline)
	best, b := f.bestBaseline(f.Goodput, true)
	return Verdict{
		d >= rr && d >= b,
		fmt.Sprintf(
			"requests within the SLO: default %.1f%%, round robin %.1f%%, best baseline %s %.1f%%",
			100*d,
			100*rr,
			best,
			100*b,
		),
	}
}
