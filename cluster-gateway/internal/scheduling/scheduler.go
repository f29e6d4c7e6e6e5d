package scheduling

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/modelfilter"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/subsethint"
)

// EndpointSource is what the scheduler needs from the endpoint store: a lock-free snapshot of the
// endpoints (not modified by the scheduler) and removal notifications, so plugins can drop
// per-endpoint state. datastore.Store's View satisfies it; so does plugintest.Handle.
type EndpointSource interface {
	Endpoints() []framework.Endpoint
	OnRemove(f func(addr string))
}

// Scheduler picks endpoints for requests. It is safe for concurrent use.
type Scheduler struct {
	name     string
	profile  *framework.Profile
	scorers  []framework.WeightedScorer
	baseline bool
	src      EndpointSource
	now      func() time.Time
	log      *slog.Logger
	services map[string]any
	metrics  *metrics
	model    *modelfilter.Filter
	subset   *subsethint.Filter
	ttft     TTFTModel
	pool     sync.Pool
	// prefill is the prefill profile of a prefill/decode profile (nil otherwise).
	prefill *stage
}

// stage is a profile's filters (the fixed pre-filters removed) and its scorers in running order.
type stage struct {
	profile *framework.Profile
	scorers []framework.WeightedScorer
}

// TTFTModel is a profile's time-to-first-token model, implemented by the predicted-ttft-scorer:
// the scheduler predicts with it (PredictTTFT, PredictChosen) and hands it to the capacity
// publisher, which reads a reference request's prediction and the measured speeds of every pod
// (publish.TTFTPredictor and publish.SpeedSource). Implementations must be safe for concurrent
// use.
type TTFTModel interface {
	// Predict returns the predicted time to first token of a request of promptTokens
	// (cachedTokens of them in the pod's prefix cache) sent to e now.
	Predict(e framework.Endpoint, promptTokens, cachedTokens int) time.Duration
	// Speed returns the prefill speed (prompt tokens per second) and decode speed (output
	// tokens per second of one sequence) the model assumes for e; ok is false when it has no
	// estimate at all.
	Speed(e framework.Endpoint) (prefillTokensPerSecond, decodeTokensPerSecond float64, ok bool)
}

// New builds the scheduler for cfg over src. logger may be nil (discard); reg may be nil (metrics
// are kept but not registered).
func New(cfg Config, src EndpointSource, logger *slog.Logger, reg prometheus.Registerer) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pc, baseline, err := cfg.load()
	if err != nil {
		return nil, fmt.Errorf("scheduling: %w", err)
	}
	s := &Scheduler{baseline: baseline, src: src, now: cfg.Now, log: logger, services: cfg.Services}
	opts := framework.BuildOptions{Handle: &handle{s: s}, Logger: logger}
	if !baseline {
		opts.DefaultDetector = "utilization-detector"
	}
	if s.profile, err = framework.Build(pc, opts); err != nil {
		return nil, fmt.Errorf("scheduling: %w", err)
	}
	s.name = cfg.name()
	s.setup()
	s.metrics = newMetrics(reg, s.name, s.profile.PD != nil)
	if p, ok := s.ttft.(predictionObserver); ok {
		observePredictions(reg, p)
	}
	src.OnRemove(s.metrics.forget)
	if err := registerPluginMetrics(reg, s.profile); err != nil {
		return nil, fmt.Errorf("scheduling: %w", err)
	}
	return s, nil
}

// registerPluginMetrics registers on reg (nil: none) every plugin of p that is a
// prometheus.Collector (the session-affinity-scorer's table figures), in the order of their
// instance names.
func registerPluginMetrics(reg prometheus.Registerer, p *framework.Profile) error {
	if reg == nil {
		return nil
	}
	names := make([]string, 0, len(p.Plugins))
	for name := range p.Plugins {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if c, ok := p.Plugins[name].(prometheus.Collector); ok {
			if err := reg.Register(c); err != nil {
				return fmt.Errorf("register the metrics of plugin %s: %w", name, err)
			}
		}
	}
	return nil
}

// setup fixes the pipeline: model and subset-hint filtering always run first (so a profile need
// not list them), producers of cycle state score first.
func (s *Scheduler) setup() {
	s.model = modelfilter.New(modelfilter.Type, true)
	s.subset = subsethint.New(subsethint.Type)
	s.scorers = s.stage(s.profile)
	for _, ws := range s.profile.Scorers {
		if p, ok := ws.Scorer.(TTFTModel); ok && s.ttft == nil {
			s.ttft = p
		}
	}
	if p := s.profile.Prefill; p != nil {
		s.prefill = &stage{profile: p, scorers: s.stage(p)}
	}
}

// stage removes the fixed pre-filters from p's filters (keeping a listed model filter's
// parameters) and returns p's scorers with the producers of cycle state first.
func (s *Scheduler) stage(p *framework.Profile) []framework.WeightedScorer {
	filters := p.Filters[:0]
	for _, f := range p.Filters {
		switch pf := f.(type) {
		case *modelfilter.Filter:
			s.model = pf
		case *subsethint.Filter:
		default:
			filters = append(filters, f)
		}
	}
	p.Filters = filters
	scorers := slices.Clone(p.Scorers)
	slices.SortStableFunc(scorers, func(a, b framework.WeightedScorer) int {
		_, pa := a.Scorer.(framework.CycleStateProducer)
		_, pb := b.Scorer.(framework.CycleStateProducer)
		switch {
		case pa && !pb:
			return -1
		case pb && !pa:
			return 1
		}
		return 0
	})
	return scorers
}

// Profile returns the name of the running profile (a built-in name or the config file path).
func (s *Scheduler) Profile() string { return s.name }

// PredictTTFT predicts the time to first token of a request of promptTokens (none cached) on e
// with the profile's predicted-ttft-scorer, e.g. for a reference request in the capacity summary;
// ok is false when the profile has no such scorer.
func (s *Scheduler) PredictTTFT(e framework.Endpoint, promptTokens int) (d time.Duration, ok bool) {
	if s.ttft == nil {
		return 0, false
	}
	return s.ttft.Predict(e, promptTokens, 0), true
}

// PredictChosen predicts req's time to first token on the endpoint res chose (Targets[0]), with
// the prompt blocks the prefix cache matched there, using the profile's predicted-ttft-scorer;
// ok is false when the profile has no such scorer or res chose nothing.
func (s *Scheduler) PredictChosen(req *framework.Request, res *framework.Result) (d time.Duration, ok bool) {
	if s.ttft == nil || res == nil || len(res.Targets) == 0 {
		return 0, false
	}
	e := res.Targets[0]
	cached := framework.ReadPrefixMatch(res.State).TokensFor(e)
	return s.ttft.Predict(e, req.PromptTokens, cached), true
}

// Discard gives back a Schedule result that will not be sent (no PreRequest follows): it releases
// the result's cycle state.
func (s *Scheduler) Discard(res *framework.Result) {
	if res == nil {
		return
	}
	if st := res.State; st != nil {
		res.State = nil
		if sc, ok := st.Owner.(*scratch); ok {
			s.release(sc)
		}
	}
	if res.Prefill != nil {
		s.Discard(res.Prefill)
	}
}

// TTFTModel returns the profile's time-to-first-token model (its predicted-ttft-scorer), for the
// capacity summary, or nil when the profile has none.
func (s *Scheduler) TTFTModel() TTFTModel { return s.ttft }

// FlowControl reports whether the profile uses saturation (and so flow control): false for the
// baseline profiles, which behave like a plain Kubernetes Service.
func (s *Scheduler) FlowControl() bool {
	return !s.baseline && (s.profile.Detector != nil || s.profile.HasSaturationFilter())
}

// PreRequest runs the plugins' PreRequest hooks for the decision res, whose Targets[0] must be the
// endpoint the request is being sent to. Call it once per Schedule result, before sending; it
// releases the result's cycle state.
func (s *Scheduler) PreRequest(ctx context.Context, req *framework.Request, res *framework.Result) {
	if res == nil {
		return
	}
	for _, h := range s.profile.PreRequests {
		h.PreRequest(ctx, req, res)
	}
	if p := res.Prefill; p != nil && s.prefill != nil {
		for _, h := range s.prefill.profile.PreRequests {
			h.PreRequest(ctx, req, p)
		}
	}
	s.Discard(res)
}

// FirstToken runs the plugins' FirstToken hooks when a response's first token arrives (optional:
// learning then starts before the generation ends). info.TTFT must be set.
func (s *Scheduler) FirstToken(ctx context.Context, req *framework.Request, info *framework.ResponseInfo) {
	for _, h := range s.profile.FirstTokens {
		h.FirstToken(ctx, req, info)
	}
}

// PostResponse runs the plugins' PostResponse hooks with what the front door observed.
func (s *Scheduler) PostResponse(ctx context.Context, req *framework.Request, info *framework.ResponseInfo) {
	for _, h := range s.profile.PostResponses {
		h.PostResponse(ctx, req, info)
	}
}

// handle is the framework.Handle given to plugin factories.
type handle struct{ s *Scheduler }

func (h *handle) Endpoints() []framework.Endpoint { return h.s.src.Endpoints() }
func (h *handle) OnRemove(f func(addr string))    { h.s.src.OnRemove(f) }
func (h *handle) Now() time.Time                  { return h.s.now() }
func (h *handle) Logger() *slog.Logger            { return h.s.log }

// Service implements framework.Services.
func (h *handle) Service(name string) any { return h.s.services[name] }
