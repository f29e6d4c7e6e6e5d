package scheduling

import (
	"context"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Why the scheduler chose its endpoint (the scheduling span's switchyard.reason).
const (
	// reasonHighestScore: the chosen endpoint has the highest total score (ties broken at random).
	reasonHighestScore = "highest_score"
	// reasonPickerDraw: the picker drew an endpoint that is not the highest scored (a random,
	// weighted-random or round-robin picker).
	reasonPickerDraw = "picker_draw"
	// reasonOnlyCandidate: one endpoint was left after the filters.
	reasonOnlyCandidate = "only_candidate"
)

// annotate adds the decision to the scheduling span in ctx, when one records: the profile, the
// picker, why the endpoint was chosen and the top candidates' total scores (at most
// tracing.MaxTopScores, best first, "name=score"). Without a recording span it costs one
// context lookup.
func (s *Scheduler) annotate(ctx context.Context, scored []framework.ScoredEndpoint, res *framework.Result) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	chosen := res.Targets[0].Meta()
	best, reason := -1.0, reasonPickerDraw
	top := make([]framework.ScoredEndpoint, 0, min(len(scored), tracing.MaxTopScores+1))
	for _, se := range scored {
		top = append(top, se)
		slices.SortStableFunc(top, func(a, b framework.ScoredEndpoint) int { return cmpScore(b.Score, a.Score) })
		if len(top) > tracing.MaxTopScores {
			top = top[:tracing.MaxTopScores]
		}
	}
	if len(top) > 0 {
		best = top[0].Score
	}
	for _, se := range scored {
		if se.Endpoint.Meta().Address == chosen.Address && se.Score >= best {
			reason = reasonHighestScore
		}
	}
	if len(scored) == 1 {
		reason = reasonOnlyCandidate
	}
	entries := make([]string, len(top))
	for i, se := range top {
		entries[i] = tracing.ScoreEntry(se.Endpoint.Meta().Name, se.Score)
	}
	span.SetAttributes(telemetry.String(tracing.AttrProfile, s.name),
		telemetry.String(tracing.AttrPicker, s.profile.Picker.TypedName().Type),
		attribute.String(tracing.AttrReason, reason), attribute.Int(tracing.AttrCandidates, len(scored)),
		attribute.StringSlice(tracing.AttrTopScores, entries))
}

func cmpScore(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
