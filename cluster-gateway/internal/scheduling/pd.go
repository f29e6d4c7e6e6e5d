package scheduling

import (
	"context"
	"log/slog"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// disaggregate completes the decode decision res of a prefill/decode profile: when the profile's
// handler finds req worth a prefill endpoint, the prefill profile picks one (res.Prefill), and
// res.Disaggregation records what was decided. Finding no prefill endpoint is not an error: the
// decode endpoint then prefills the prompt itself, as it does when a handler that weighs the
// two (framework.PrefillWeigher) finds the split does not pay.
func (s *Scheduler) disaggregate(ctx context.Context, req *framework.Request, res *framework.Result) {
	decode := res.Targets[0]
	switch {
	case !s.profile.PD.NeedsPrefill(ctx, res.State, req, decode):
		res.Disaggregation = framework.PDBelowThreshold
	default:
		sc := s.acquire()
		sc.cs.Now = res.State.Now
		p := s.pickPrefill(ctx, req, sc, decode)
		switch {
		case p == nil:
			s.release(sc)
			res.Disaggregation = framework.PDNoPrefill
		case !s.splitPays(ctx, res.State, &sc.cs, req, decode, p.Targets):
			s.release(sc)
			res.Disaggregation = framework.PDLocalPrefill
		default:
			p.State = &sc.cs
			res.Prefill, res.Disaggregation = p, framework.PDSplit
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

// splitPays asks the handler, when it weighs the split, whether one of the prefill profile's
// targets computing the prompt beats decode prefilling it itself, and moves the one it found
// best to the front; a handler that does not weigh always splits on the profile's pick.
func (s *Scheduler) splitPays(
	ctx context.Context,
	cs, pcs *framework.CycleState,
	req *framework.Request,
	decode framework.Endpoint,
	prefills []framework.Endpoint,
) bool {
	w, ok := s.profile.PD.(framework.PrefillWeigher)
	if !ok {
		return true
	}
	best, pays := w.SplitPays(ctx, cs, pcs, req, decode, prefills)
	if best > 0 && best < len(prefills) {
		prefills[0], prefills[best] = prefills[best], prefills[0]
	}
	return pays
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
