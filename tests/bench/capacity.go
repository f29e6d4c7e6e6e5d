package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// CapacityConfig controls the search for one pod's capacity.
type CapacityConfig struct {
	// Span is how long (simulated) arrivals are sent at each probed rate.
	Span time.Duration
	// MaxMeanWaiting is the bound on the pod's mean waiting queue over the second half of the span
	// under which a rate counts as sustained (the queue stays bounded instead of growing).
	MaxMeanWaiting float64
	// Precision is the relative width at which the bisection stops.
	Precision float64
	// MaxLoras and LoRAs configure the pod's adapter slots (multi-lora).
	MaxLoras int
	// Physics is the pod's step-time model.
	Physics physics.Config
}

// DefaultCapacityConfig returns the settings the documented capacities were measured with.
func DefaultCapacityConfig() CapacityConfig {
	return CapacityConfig{
		Span:           120 * time.Second,       // two minutes: a growing queue has time to show
		MaxMeanWaiting: 1,                       // at most one request waiting on average
		Precision:      0.02,                    // 2% of the rate
		Physics:        physics.DefaultConfig(), // modelsim's default (linear) model
	}
}

// Probe is the outcome of one simulated rate.
type Probe struct {
	// Rate is the arrival rate in req/s (simulated time).
	Rate float64
	// MeanWaiting is the mean waiting queue over the second half of the span.
	MeanWaiting float64
	// Sustained is MeanWaiting <= CapacityConfig.MaxMeanWaiting.
	Sustained bool
	// TooLong counts the requests left out because they do not fit the pod's KV cache at all.
	TooLong int
}

// MeasureCapacity returns the highest Poisson arrival rate (req/s, simulated time) of w's request
// shape that one pod of profile prof sustains with a bounded queue. It runs modelsim's engine on a
// virtual clock (engine.Simulator), so it is deterministic and takes no real time beyond the CPU.
func MeasureCapacity(
	ctx context.Context,
	w *workload.Workload,
	prof string,
	cfg CapacityConfig,
) (float64, []Probe, error) {
	p, err := profile.Lookup(prof)
	if err != nil {
		return 0, nil, err
	}
	var probes []Probe
	var src requestSource = steadyRequests{w}
	if w.IsTrace() {
		src = &traceProbeRequests{w: w}
	}
	probe := func(rate float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		pr, err := simulateRate(w, src, p, rate, cfg)
		if err != nil {
			return false, err
		}
		probes = append(probes, pr)
		return pr.Sustained, nil
	}
	lo, hi := 0.0, 0.25
	for {
		ok, err := probe(hi)
		if err != nil {
			return 0, probes, err
		}
		if !ok {
			break
		}
		lo, hi = hi, hi*2
		if hi > 1e4 {
			return 0, probes, fmt.Errorf("capacity %s/%s: no saturation below %v req/s", w.Name, prof, hi)
		}
	}
	for (hi-lo)/hi > cfg.Precision {
		mid := (lo + hi) / 2
		ok, err := probe(mid)
		if err != nil {
			return 0, probes, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, probes, nil
}

// requestSource gives the requests of one capacity probe: Poisson arrivals at rate for span.
type requestSource interface {
	requests(rate float64, span time.Duration) ([]workload.Request, error)
}

// steadyRequests draws a workload's requests, its arrivals replaced by a Poisson process.
type steadyRequests struct{ w *workload.Workload }

func (s steadyRequests) requests(rate float64, span time.Duration) ([]workload.Request, error) {
	steady := s.w.Clone()
	steady.Arrival = &workload.Arrival{Process: workload.Poisson, Rate: rate}
	steady.Regions = nil
	steady.Duration = span
	if err := steady.Validate(); err != nil {
		return nil, err
	}
	return workload.Generate(steady, steady.Seed)
}

// simulateRate sends span of Poisson arrivals of w's shape at rate to one simulated pod and
// samples its waiting queue every simulated second. A request too long for the pod's KV cache
// (a pod answers it 400) is left out and counted.
func simulateRate(
	w *workload.Workload,
	src requestSource,
	p profile.Profile,
	rate float64,
	cfg CapacityConfig,
) (Probe, error) {
	reqs, err := src.requests(rate, cfg.Span)
	if err != nil {
		return Probe{}, err
	}
	ecfg := engine.DefaultConfig()
	ecfg.Profile, ecfg.MaxLoras, ecfg.Physics = p, cfg.MaxLoras, cfg.Physics
	sim, err := engine.NewSimulator(ecfg)
	if err != nil {
		return Probe{}, err
	}
	tooLong := 0
	for i := range reqs {
		if _, err := sim.Submit(reqs[i].At, engineRequest(w, &reqs[i])); errors.Is(err, engine.ErrExceedsKV) {
			tooLong++
		} else if err != nil {
			return Probe{}, fmt.Errorf("request %d: %w", i, err)
		}
	}
	var sum float64
	var n int
	for t := time.Second; t <= cfg.Span; t += time.Second {
		sim.RunUntil(t)
		if t > cfg.Span/2 {
			sum += float64(sim.Engine().Snapshot().Waiting)
			n++
		}
	}
	mean := sum / math.Max(1, float64(n))
	return Probe{Rate: rate, MeanWaiting: mean, Sustained: mean <= cfg.MaxMeanWaiting, TooLong: tooLong}, nil
}

// engineRequest renders r the way modelsim's HTTP API hands it to the engine.
func engineRequest(w *workload.Workload, r *workload.Request) engine.Request {
	var text string
	if r.Endpoint == workload.Completions {
		text = r.Text()
	} else {
		var msgs []textgen.Message
		if r.System != "" {
			msgs = append(msgs, textgen.Message{Role: "system", Content: r.System})
		}
		text = textgen.RenderChat(append(msgs, textgen.Message{Role: "user", Content: r.Prompt}))
	}
	adapter := ""
	if r.Model != w.Model {
		adapter = r.Model
	}
	return engine.Request{Model: r.Model, Adapter: adapter, Prompt: []byte(text),
		PromptTokens: textgen.CountTokens(text), MaxTokens: r.MaxTokens, FinishReason: "length"}
}
