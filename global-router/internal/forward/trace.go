package forward

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/global-router/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// SpanForward covers one attempt on a gateway: a child of the request's span, the parent of
// the gateway's request span (its traceparent is sent). A retry is another span, with
// switchyard.route=retry and the attempt's number.
const SpanForward = "router.forward"

// startAttempt starts the span of the n-th attempt of r on t; nil when tracing is off.
func (f *Forwarder) startAttempt(r *http.Request, t Target, n int) trace.Span {
	if !f.cfg.Tracer.Enabled() {
		return nil
	}
	_, span := f.cfg.Tracer.Start(r.Context(), SpanForward, trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(
			telemetry.String(tracing.AttrCluster, t.Cluster),
			telemetry.String(tracing.AttrRegion, t.Region),
			telemetry.String(
				tracing.AttrURL,
				t.URL,
			),
			attribute.String(tracing.AttrRoute, t.Route),
			attribute.Int(tracing.AttrAttempt, n),
		)
	}
	return span
}

// inject sends the attempt span's traceparent (and tracestate) in h, replacing the client's.
func (f *Forwarder) inject(span trace.Span, h http.Header) {
	if span == nil {
		return
	}
	f.cfg.Tracer.Inject(trace.ContextWithSpan(context.Background(), span), propagation.HeaderCarrier(h))
}

// traceStatus records an HTTP status on span (nil: tracing off).
func traceStatus(span trace.Span, status int) {
	if span == nil || !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int(tracing.AttrStatus, status))
}

// traceFirstToken adds the first_token event to an attempt's span.
func traceFirstToken(span trace.Span, ttft time.Duration) {
	if span == nil || !span.IsRecording() {
		return
	}
	ms := float64(ttft.Microseconds()) / 1000
	span.AddEvent(tracing.EventFirstToken, trace.WithAttributes(attribute.Float64(tracing.AttrTTFT, ms)))
	span.SetAttributes(attribute.Float64(tracing.AttrTTFT, ms), attribute.Bool(tracing.AttrStreamed, true))
}

// endAttempt ends an attempt's span: err is its refusal, or the answer's truncation.
func endAttempt(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && span.IsRecording() {
		kind := "refused"
		if errors.Is(err, ErrTruncated) {
			kind = "truncated"
		}
		span.SetAttributes(attribute.String(tracing.AttrErrorType, kind))
		span.SetStatus(codes.Error, telemetry.Truncate(err.Error(), telemetry.MaxAttributeLength))
	}
	span.End()
}
