package scheduling

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// scratch is one decision's reusable memory, pooled across requests.
type scratch struct {
	cands  []framework.Endpoint
	totals []float64
	tmp    []float64
	scored []framework.ScoredEndpoint
	cs     framework.CycleState
}

// pooling is false in builds with the nopool tag (nopool.go), which bypass the package's pools
// so that benchmarks can measure what they save.
var pooling = true

func (s *Scheduler) acquire() *scratch {
	if pooling {
		if sc, ok := s.pool.Get().(*scratch); ok {
			return sc
		}
	}
	sc := &scratch{}
	sc.cs.Owner = sc
	return sc
}

func (s *Scheduler) release(sc *scratch) {
	sc.cs.Reset()
	clear(sc.cands[:cap(sc.cands)])
	clear(sc.scored[:cap(sc.scored)])
	if pooling {
		s.pool.Put(sc)
	}
}

// Schedule picks the endpoint for req: Targets[0] is the choice, the rest are fallbacks in order
// of preference. Errors are ErrUnknownModel, ErrNoEndpoints and ErrSaturated. On success the
// caller must pass the result to PreRequest before sending.
func (s *Scheduler) Schedule(ctx context.Context, req *framework.Request) (*framework.Result, error) {
	start := time.Now()
	sc := s.acquire()
	sc.cs.Now = s.now()
	res, err := s.run(ctx, req, sc)
	s.metrics.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		s.release(sc)
		if c, ok := s.metrics.outcomes[err]; ok {
			c.Inc()
		}
		return nil, err
	}
	res.State = &sc.cs
	if s.profile.PD != nil {
		s.disaggregate(ctx, req, res)
	}
	s.metrics.ok.Inc()
	s.metrics.picks.WithLabelValues(res.Targets[0].Meta().Address).Inc()
	return res, nil
}

func (s *Scheduler) run(ctx context.Context, req *framework.Request, sc *scratch) (*framework.Result, error) {
	cands, err := s.candidates(ctx, req, sc)
	if err != nil {
		return nil, err
	}
	sc.cands = cands
	var dbg *strings.Builder
	if s.log.Enabled(ctx, slog.LevelDebug) {
		dbg = &strings.Builder{}
	}
	scored := s.score(ctx, req, sc, s.scorers, cands, dbg)
	res := s.profile.Picker.Pick(ctx, &sc.cs, req, scored)
	if res == nil || len(res.Targets) == 0 {
		return nil, ErrNoEndpoints
	}
	s.annotate(ctx, scored, res)
	if dbg != nil {
		s.log.LogAttrs(ctx, slog.LevelDebug, "schedule decision", slog.String("model", req.Model),
			slog.Int("prompt_tokens", req.PromptTokens), slog.String("picked", res.Targets[0].Meta().Address),
			slog.String("scores", dbg.String()))
	}
	return res, nil
}

// candidates runs the fixed pre-filters (model, subset hint, passive health) and the profile's
// filters, mapping an empty result to the right error.
func (s *Scheduler) candidates(ctx context.Context, req *framework.Request, sc *scratch) ([]framework.Endpoint, error) {
	cs := &sc.cs
	cands, err := s.prefiltered(ctx, req, sc)
	if err != nil {
		return nil, err
	}
	if d := s.profile.Detector; d != nil && framework.PoolSaturated(d.Saturation(ctx, cs, cands)) {
		return nil, ErrSaturated
	}
	return s.filter(ctx, req, cs, s.profile.Filters, cands)
}

// prefiltered runs the fixed pre-filters: model, subset hint, passive health.
func (s *Scheduler) prefiltered(
	ctx context.Context,
	req *framework.Request,
	sc *scratch,
) ([]framework.Endpoint, error) {
	cs := &sc.cs
	cands := append(sc.cands[:0], s.src.Endpoints()...)
	sc.cands = cands
	if cands = s.model.Filter(ctx, cs, req, cands); len(cands) == 0 {
		return nil, ErrUnknownModel
	}
	if cands = s.subset.Filter(ctx, cs, req, cands); len(cands) == 0 {
		return nil, ErrNoEndpoints
	}
	return dropEjected(cands, cs.Now), nil
}

// filter runs a profile's filters, mapping an empty result to the right error.
func (s *Scheduler) filter(
	ctx context.Context,
	req *framework.Request,
	cs *framework.CycleState,
	filters []framework.Filter,
	cands []framework.Endpoint,
) ([]framework.Endpoint, error) {
	for _, f := range filters {
		if cands = f.Filter(ctx, cs, req, cands); len(cands) == 0 {
			if r, ok := f.(framework.Refuser); ok {
				if err := r.Refusal(req); err != nil {
					return nil, err
				}
			}
			if _, ok := f.(framework.SaturationFilter); ok {
				return nil, ErrSaturated
			}
			return nil, ErrNoEndpoints
		}
	}
	return cands, nil
}

// dropEjected removes endpoints in an ejection backoff unless every candidate is ejected, in
// which case all are kept (Envoy's panic mode): a failing pool is still tried rather than
// refused. Profiles with a saturation filter then treat ejected endpoints as saturated.
func dropEjected(eps []framework.Endpoint, now time.Time) []framework.Endpoint {
	n := 0
	for _, e := range eps {
		if !e.Ejected(now) {
			n++
		}
	}
	if n == 0 || n == len(eps) {
		return eps
	}
	out := eps[:0]
	for _, e := range eps {
		if !e.Ejected(now) {
			out = append(out, e)
		}
	}
	return out
}

// score sums weight·score over the profile's scorers into ScoredEndpoints. With dbg it also writes
// every endpoint's score from every scorer there, "address: scorer=score ... total=sum; ...".
func (s *Scheduler) score(
	ctx context.Context,
	req *framework.Request,
	sc *scratch,
	scorers []framework.WeightedScorer,
	cands []framework.Endpoint,
	dbg *strings.Builder,
) []framework.ScoredEndpoint {
	n := len(cands)
	sc.totals = grow(sc.totals, n)
	sc.tmp = grow(sc.tmp, n)
	clear(sc.totals)
	var parts [][]string // with dbg: per endpoint, "scorer=score"
	if dbg != nil {
		parts = make([][]string, n)
	}
	for _, ws := range scorers {
		ws.Score(ctx, &sc.cs, req, cands, sc.tmp)
		for i, v := range sc.tmp {
			if parts != nil {
				parts[i] = append(parts[i], fmt.Sprintf("%s=%.3f", ws.TypedName().Type, v))
			}
			if ws.Weight != 0 {
				sc.totals[i] += ws.Weight * v
			}
		}
	}
	for i, p := range parts {
		if i > 0 {
			dbg.WriteString("; ")
		}
		fmt.Fprintf(dbg, "%s: %s total=%.3f", cands[i].Meta().Address, strings.Join(p, " "), sc.totals[i])
	}
	if cap(sc.scored) < n {
		sc.scored = make([]framework.ScoredEndpoint, n, n+n/4)
	}
	sc.scored = sc.scored[:n]
	for i, e := range cands {
		sc.scored[i] = framework.ScoredEndpoint{Endpoint: e, Score: sc.totals[i]}
	}
	return sc.scored
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n, n+n/4)
	}
	return s[:n]
}
