package extproc

import (
	"context"
	"slices"
	"strings"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// SpanRequest is the server span of one request Envoy sends through ext_proc, from its body's
// end to the end of the stream: the parent of the pipeline's gateway.schedule and
// gateway.upstream spans.
const SpanRequest = "gateway.request"

// startSpan starts the request's span, a child of the traceparent Envoy passed on (the
// client's, or Envoy's own span's when Envoy traces), and returns the context the decision
// runs in: the stream's when tracing is off.
func (x *exchange) startSpan() context.Context {
	t := x.s.pipe.Tracer()
	if !t.Enabled() {
		return x.ctx
	}
	ctx := t.Extract(x.ctx, propagation.MapCarrier(x.headers)) // lower-case names, as the propagator reads them
	x.tctx, x.span = t.Start(ctx, SpanRequest, trace.SpanKindServer)
	if x.span.IsRecording() {
		x.span.SetAttributes(
			telemetry.String(tracing.AttrMethod, x.headers[":method"]),
			telemetry.String("switchyard.front_door", "ext_proc"),
		)
		if x.s.cfg.Cluster != "" {
			x.span.SetAttributes(telemetry.String(tracing.AttrCluster, x.s.cfg.Cluster))
		}
	}
	return x.tctx
}

// traceHeaders adds the upstream attempt's traceparent (and tracestate) to the header
// mutations of the decision, replacing the client's: ext_proc changes the request Envoy sends
// to the pod only through header mutations, so this is how the pod learns its parent span.
// Nothing is added when tracing is off (the client's traceparent then passes through as sent).
func (x *exchange) traceHeaders(mut *extprocv3.HeaderMutation) {
	if x.span == nil || x.attempt == nil {
		return
	}
	carrier := propagation.MapCarrier{}
	x.s.pipe.Inject(x.attempt, carrier)
	keys := carrier.Keys()
	slices.Sort(keys)
	for _, k := range keys {
		mut.SetHeaders = append(mut.SetHeaders, setHeader(strings.ToLower(k), carrier[k]))
	}
}

// traceError records an immediate answer on the request's span.
func (x *exchange) traceError(e *apierror.Error) {
	if x.span == nil || !x.span.IsRecording() {
		return
	}
	telemetry.StatusCode(x.span, e.Status)
	code := string(e.Code)
	if code == "" {
		code = e.Type
	}
	telemetry.Fail(x.span, code, e.Message)
}

// endSpan ends the request's span with the pod's status, once the stream is over.
func (x *exchange) endSpan() {
	if x.span == nil {
		return
	}
	telemetry.StatusCode(x.span, x.status)
	x.span.End()
	x.span, x.tctx = nil, nil
}
