package frontdoor

import (
	"cmp"
	"errors"
	"net/http"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/global-router/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Span names of the front door.
const (
	// SpanRequest is the server span of one request: the parent of its routing decisions and
	// of the forwarder's attempts.
	SpanRequest = "router.request"
	// SpanRoute covers one routing decision (a request waiting for room is decided again every
	// RetryPoll, each decision its own span).
	SpanRoute = "router.route"
)

// startRequest starts the request's server span, a child of the client's traceparent, and
// returns the request carrying it. Only called with tracing on.
func (s *Server) startRequest(r *http.Request) (*http.Request, trace.Span) {
	t := s.cfg.Tracer
	ctx := t.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.Start(ctx, SpanRequest, trace.SpanKindServer)
	if span.IsRecording() {
		// The path is one of the inference routes the mux matched: a bounded set.
		span.SetAttributes(
			telemetry.String(tracing.AttrMethod, r.Method),
			telemetry.String(tracing.AttrHTTPRoute, r.URL.Path),
			telemetry.String(tracing.AttrRegion, s.cfg.Region),
		)
	}
	return r.WithContext(ctx), span
}

// failedOutcomes are the outcomes that mark a request's span failed.
var failedOutcomes = []string{
	"no_room",
	outcomePolicyUnavailable,
	outcomeTruncated,
	"not_allowed",
	"not_found",
	"too_large",
	"body_budget",
	"bad_request",
}

// endRequest records the request's outcome (a bounded label) and its model.
func endRequest(span trace.Span, model, outcome string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String(tracing.AttrOutcome, outcome))
	if model != "" {
		span.SetAttributes(telemetry.String(tracing.AttrModel, model))
	}
	if slices.Contains(failedOutcomes, outcome) {
		span.SetAttributes(attribute.String(tracing.AttrErrorType, outcome))
		span.SetStatus(codes.Error, outcome)
	}
}

// traceDecision records a routing decision on its span and ends it: the chosen cluster, its
// region, the route, why it was chosen (and why the request left the region), and the best
// eligible candidates' estimated times to first token (at most tracing.MaxTopEstimates).
func traceDecision(
	span trace.Span,
	model string,
	promptTokens int,
	view []clustertable.Entry,
	d routing.Decision,
	err error,
) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(telemetry.String(tracing.AttrModel, model), attribute.Int(tracing.AttrPromptTokens, promptTokens),
		attribute.Int(tracing.AttrCandidates, len(view)))
	if err != nil {
		span.SetAttributes(attribute.String(tracing.AttrErrorType, decisionErrorType(err)))
		span.SetStatus(codes.Error, telemetry.Truncate(err.Error(), telemetry.MaxAttributeLength))
		return
	}
	if len(d.Targets) > 0 {
		chosen := d.Explain[d.Targets[0]]
		span.SetAttributes(
			telemetry.String(tracing.AttrCluster, chosen.Cluster),
			telemetry.String(tracing.AttrRegion, chosen.Region),
			attribute.String(tracing.AttrReason, chosen.Reason.String()),
		)
	}
	span.SetAttributes(attribute.String(tracing.AttrRoute, string(d.Route)))
	if d.LeftBecause != "" {
		span.SetAttributes(attribute.String(tracing.AttrLeftBecause, d.LeftBecause.String()))
	}
	if d.HandBack > 0 {
		span.SetAttributes(attribute.Int64(tracing.AttrHandBack, d.HandBack.Milliseconds()))
	}
	span.SetAttributes(attribute.StringSlice(tracing.AttrTopEstimates, topEstimates(d.Explain)))
}

// topEstimates lists the eligible candidates with the lowest estimates, best first.
func topEstimates(explain []routing.Explanation) []string {
	var top []routing.Explanation
	for _, e := range explain {
		if e.Eligible {
			top = append(top, e)
		}
	}
	slices.SortStableFunc(top, func(a, b routing.Explanation) int { return cmp.Compare(a.Estimate, b.Estimate) })
	top = top[:min(len(top), tracing.MaxTopEstimates)]
	out := make([]string, len(top))
	for i, e := range top {
		out[i] = tracing.EstimateEntry(e.Cluster, e.Estimate)
	}
	return out
}

// decisionErrorType is the bounded error.type of a decision that found no cluster.
func decisionErrorType(err error) string {
	switch {
	case errors.Is(err, routing.ErrPolicyNotLoaded), errors.Is(err, routing.ErrPolicyUnreadable):
		return outcomePolicyUnavailable
	case errors.Is(err, routing.ErrNoCandidate):
		return "not_found"
	case errors.Is(err, routing.ErrNotAllowed):
		return "not_allowed"
	}
	return "no_room"
}
