package scheduling

import (
	"context"
	"log/slog"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// disaggregate completes the decode decision res of a prefill/decode profile: when the profile's
// handler finds req worth a prefill endpoint, the prefill profile picks one (res.Prefill), and
// res.Disaggregation records what was decided. Finding no prefill endpoint is not an error: the
// decode endpoint then prefills the prompt itself.
func (s *Scheduler) disaggregate(ctx context.Context, req *framework.Request, res *framework.Result) {
	decode := res.Targets[0]
	switch {
	case !s.profile.PD.NeedsPrefill(ctx, res.State, req, decode):
		res.Disaggregation = framework.PDBelowThreshold
	default:
		sc := s.acquire()
		sc.cs.Now = res.State.Now
		if p := s.pickPrefill(ctx, req, sc, decode); p != nil {
			p.State = &sc.cs
			res.Prefill, res.Disaggregation = p, framework.PDSplit
		} else {
			s.release(sc)
			res.Disaggregation = framework.PDNoPrefill
		}
	}
	s.metrics.pd[res.Disaggregation].Inc()
	if s.log.Enabled(ctx, slog.LevelDebug) {
		prefill := ""
		if res.Prefill != nil {
			prefill = res.Prefill.Targets[0].Meta().Address
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "prefill/decode decision", slog.String("decision", res.Disaggregation),
			slog.String("decode", decode.Meta().Address), slog.String("prefill", prefill))
	}
}

// pickPrefill runs the prefill profile over the pre-filtered endpoints but decode; nil when
// its filters leave none or its picker picks none.
func (s *Scheduler) pickPrefill(
	ctx context.Context,
	req *framework.Request,
	sc *scratch,
	decode framework.Endpoint,
) *framework.Result {
	cands, err := s.prefiltered(ctx, req, sc)
	if err != nil {
		return nil
	}
	cands = without(cands, decode)
	if len(cands) == 0 {
		return nil
	}
	if cands, err = s.filter(ctx, req, &sc.cs, s.prefill.profile.Filters, cands); err != nil {
		return nil
	}
	sc.cands = cands
	scored := s.score(ctx, req, sc, s.prefill.scorers, cands, nil)
	res := s.prefill.profile.Picker.Pick(ctx, &sc.cs, req, scored)
	if res == nil || len(res.Targets) == 0 {
		return nil
	}
	return res
}

// without removes e from eps in place.
func without(eps []framework.Endpoint, e framework.Endpoint) []framework.Endpoint {
	out := eps[:0]
	for _, x := range eps {
		if x != e {
			out = append(out, x)
		}
	}
	return out
}
