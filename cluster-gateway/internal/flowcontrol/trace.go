package flowcontrol

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// SpanQueue covers the time a request waits in a flow-control queue, a child of the
// pipeline's scheduling span. It is started only when that span records.
const SpanQueue = "gateway.queue"

// tracerScope is the instrumentation scope of the queue span.
const tracerScope = "github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"

// startQueueSpan starts the queue span of req under the recording span in ctx (marking that
// span queued); without one it returns ctx and nil. Queueing is the slow path: the span's
// cost is nothing beside the wait.
func startQueueSpan(ctx context.Context, req *framework.Request) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	parent.SetAttributes(attribute.Bool("switchyard.queued", true))
	ctx, span := parent.TracerProvider().Tracer(tracerScope).Start(ctx, SpanQueue)
	span.SetAttributes(attribute.Int("switchyard.priority", req.Priority))
	return ctx, span
}

// endQueueSpan ends the queue span with how the wait ended: dispatched, or the refusal.
func endQueueSpan(span trace.Span, err *error) {
	if span == nil {
		return
	}
	outcome := "dispatched"
	if *err != nil {
		outcome = "refused"
		span.SetStatus(codes.Error, (*err).Error())
	}
	span.SetAttributes(attribute.String("switchyard.queue.outcome", outcome))
	span.End()
}
