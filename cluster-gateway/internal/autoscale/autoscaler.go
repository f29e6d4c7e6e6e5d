package autoscale

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Source is the pool's capacity as the gateway sees it now: one ModelCapacity per base model
// (the same figures the gateway gossips to routers).
type Source interface {
	Capacity() *gossipv1.CapacitySummary
}

// Options are an Autoscaler's optional collaborators.
type Options struct {
	// Logger receives a line when a model's desired count changes. Nil: discard.
	Logger *slog.Logger
	// Registerer receives the metrics. Nil: none registered.
	Registerer prometheus.Registerer
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

// Autoscaler recomputes each model's desired replica count every Config.Interval. Create it with
// New and run it with Run; Step and Recommendations are safe for concurrent use.
type Autoscaler struct {
	cfg     Config
	src     Source
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics

	mu      sync.Mutex
	history map[string][]sample // per model, the raw counts of the scale-down window, oldest first
	last    map[string]Recommendation
}

// sample is one step's raw count.
type sample struct {
	at  time.Time
	raw int
}

// New validates cfg and returns an Autoscaler of src's pools.
func New(cfg Config, src Source, opts Options) (*Autoscaler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("autoscale: a Source is required")
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	a := &Autoscaler{cfg: cfg, src: src, log: opts.Logger, now: opts.Now, metrics: m,
		history: make(map[string][]sample), last: make(map[string]Recommendation)}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a, nil
}

// Run steps every Config.Interval until ctx ends.
func (a *Autoscaler) Run(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	a.Step()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			a.Step()
		}
	}
}

// Step recomputes every model's recommendation from the source's capacity now, updates the
// metrics and returns the recommendations sorted by model. A model no pod serves any more is
// dropped, with its series.
func (a *Autoscaler) Step() []Recommendation {
	now := a.now()
	summary := a.src.Capacity()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Recommendation, 0, len(summary.GetModels()))
	seen := make(map[string]bool, len(summary.GetModels()))
	for _, mc := range summary.GetModels() {
		if mc.GetName() == "" || seen[mc.GetName()] {
			continue
		}
		seen[mc.GetName()] = true
		r := a.recommend(mc, now)
		out = append(out, r)
		a.metrics.set(r)
		if prev, ok := a.last[r.Model]; !ok || prev.Desired != r.Desired {
			ratio, signal := r.Ratios.Max()
			a.log.Info("desired replicas", "model", r.Model, "desired", r.Desired, "ready", r.Ready,
				"signal", signal, "ratio", ratio)
		}
		a.last[r.Model] = r
	}
	for model := range a.last {
		if !seen[model] {
			delete(a.last, model)
			delete(a.history, model)
			a.metrics.drop(model)
		}
	}
	slices.SortFunc(out, func(x, y Recommendation) int { return strings.Compare(x.Model, y.Model) })
	return out
}

// recommend computes mc's recommendation and records its raw count in the window.
func (a *Autoscaler) recommend(mc *gossipv1.ModelCapacity, now time.Time) Recommendation {
	r := Recommendation{Model: mc.GetName(), Ready: int(mc.GetReadyPods()), Ratios: ratiosOf(a.cfg, mc)}
	r.Raw = clamp(a.cfg, rawDesired(a.cfg, mc, r.Ratios))
	h := append(a.history[r.Model], sample{at: now, raw: r.Raw})
	cut := 0
	for cut < len(h)-1 && now.Sub(h[cut].at) > a.cfg.ScaleDownWindow {
		cut++
	}
	h = append(h[:0], h[cut:]...)
	a.history[r.Model] = h
	r.Desired = r.Raw
	for _, s := range h {
		r.Desired = max(r.Desired, s.raw)
	}
	return r
}

// Recommendations returns the last step's recommendations sorted by model.
func (a *Autoscaler) Recommendations() []Recommendation {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Recommendation, 0, len(a.last))
	for _, r := range a.last {
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y Recommendation) int { return strings.Compare(x.Model, y.Model) })
	return out
}
