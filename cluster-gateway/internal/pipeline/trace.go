package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// Span names of the pipeline.
const (
	// SpanSchedule covers one admission: flow control (with a gateway.queue child while the
	// request waits in a queue) and the scheduler, which adds the profile, the picker, the
	// reason and the top candidates' scores.
	SpanSchedule = "gateway.schedule"
	// SpanUpstream covers one attempt on a model server, from sending to the answer's end.
	SpanUpstream = "gateway.upstream"
)

// startSchedule starts the scheduling span of req (a no-op when tracing is off).
func (p *Pipeline) startSchedule(
	ctx context.Context,
	req *framework.Request,
	again bool,
) (context.Context, trace.Span) {
	if !p.tracer.Enabled() {
		return ctx, nil
	}
	ctx, span := p.tracer.Start(ctx, SpanSchedule, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(telemetry.String(tracing.AttrRequestID, req.ID), telemetry.String(tracing.AttrModel, req.Model),
			telemetry.String(tracing.AttrBaseModel, req.BaseModel), attribute.Int(tracing.AttrPriority, req.Priority),
			telemetry.String(tracing.AttrTenant, req.Tenant), attribute.Int(tracing.AttrPromptTokens, req.PromptTokens))
		if again {
			span.SetAttributes(attribute.Bool(tracing.AttrRescheduled, true))
		}
	}
	return ctx, span
}

// endSchedule ends the scheduling span with the chosen endpoint, or the refusal.
func (p *Pipeline) endSchedule(span trace.Span, res *framework.Result, err error) {
	if span == nil {
		return
	}
	defer span.End()
	if !span.IsRecording() {
		return
	}
	if err != nil {
		e := p.Translate(err)
		telemetry.StatusCode(span, e.Status)
		telemetry.Fail(span, errorType(e), err.Error())
		return
	}
	if ep, ok := res.Targets[0].(*datastore.Endpoint); ok {
		span.SetAttributes(telemetry.String(tracing.AttrEndpoint, ep.Name), telemetry.String(tracing.AttrAddress, ep.Address))
	}
	span.SetAttributes(attribute.Int(tracing.AttrCandidates, len(res.Targets)))
}

// errorType is the bounded error.type of a refusal: its OpenAI-style code, else its type (both
// fixed spellings).
func errorType(e *apierror.Error) string {
	if e.Code != "" {
		return string(e.Code)
	}
	return e.Type
}

// startUpstream starts the span of an attempt on ep, a child of the request's span in ctx.
func (p *Pipeline) startUpstream(
	ctx context.Context,
	d *Decision,
	ep *datastore.Endpoint,
) (context.Context, trace.Span) {
	if !p.tracer.Enabled() {
		return ctx, nil
	}
	ctx, span := p.tracer.Start(ctx, SpanUpstream, trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(telemetry.String(tracing.AttrEndpoint, ep.Name), telemetry.String(tracing.AttrAddress, ep.Address),
			telemetry.String(tracing.AttrModel, d.Request.Model))
	}
	return ctx, span
}

// endUpstream ends an attempt's span with its status, time to first token and usage.
func endUpstream(span trace.Span, status int, err error, m Measurement) {
	if span == nil {
		return
	}
	defer span.End()
	if !span.IsRecording() {
		return
	}
	telemetry.StatusCode(span, status)
	if err != nil {
		telemetry.Fail(span, "upstream_error", err.Error())
	}
	if m.TTFT > 0 {
		span.SetAttributes(telemetry.Milliseconds(tracing.AttrTTFT, m.TTFT))
	}
	if m.MeanITL > 0 {
		span.SetAttributes(telemetry.Milliseconds(tracing.AttrITL, m.MeanITL))
	}
	span.SetAttributes(attribute.Int(tracing.AttrOutputTokens, m.OutputTokens))
	if m.PromptTokens >= 0 {
		span.SetAttributes(attribute.Int(tracing.AttrInputTokens, m.PromptTokens))
	}
	if m.CachedTokens >= 0 {
		span.SetAttributes(attribute.Int(tracing.AttrCachedTokens, m.CachedTokens))
	}
}
