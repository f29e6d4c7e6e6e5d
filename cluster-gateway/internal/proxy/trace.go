package proxy

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// SpanRequest is the server span of one request through the HTTP proxy: the parent of the
// pipeline's gateway.schedule and gateway.upstream spans.
const SpanRequest = "gateway.request"

// startRequest starts the request's server span, a child of the caller's traceparent, and
// returns the request carrying it. Only called with tracing on.
func (s *Server) startRequest(t *telemetry.Tracer, r *http.Request) (*http.Request, trace.Span) {
	ctx := t.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.Start(ctx, SpanRequest, trace.SpanKindServer)
	if span.IsRecording() {
		// The path is one of the inference routes the mux matched: a bounded set.
		span.SetAttributes(telemetry.String(tracing.AttrMethod, r.Method), telemetry.String(tracing.AttrRoute, r.URL.Path))
		if s.cfg.Cluster != "" {
			span.SetAttributes(telemetry.String(tracing.AttrCluster, s.cfg.Cluster))
		}
	}
	return r.WithContext(ctx), span
}

// traceError records an error answer on the request's span, if it records.
func traceError(r *http.Request, e *apierror.Error) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	telemetry.StatusCode(span, e.Status)
	code := string(e.Code)
	if code == "" {
		code = e.Type
	}
	telemetry.Fail(span, code, e.Message)
}
