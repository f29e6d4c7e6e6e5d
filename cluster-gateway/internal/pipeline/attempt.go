package pipeline

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tracing"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
)

// firstTokenHook is the optional hook run when a response's first token arrives.
type firstTokenHook interface {
	FirstToken(ctx context.Context, req *framework.Request, info *framework.ResponseInfo)
}

// Attempt is one try of a decision on one endpoint. Begin it just before sending, feed it the
// response with Observe, and End it when the response finished (or failed).
type Attempt struct {
	d        *Decision
	ep       *datastore.Endpoint
	sentAt   time.Time
	meter    Meter
	status   int
	sawFirst bool
	// clientWait is the time spent writing and flushing the answer to the client (see ClientWrite).
	clientWait time.Duration
	ctx        context.Context // carries span; the request's context when tracing is off
	span       trace.Span      // nil when tracing is off
	// prefill is the prefill pod the decode pod was told of (nil: none); prefillFailed moves
	// the attempt's result from ep's passive health to prefill's (see PrefillFailed).
	prefill       *datastore.Endpoint
	prefillFailed bool
}

// UsePrefill notes that the attempt asks its endpoint to have prefill compute the prompt: a
// success then counts toward prefill's passive health as well as the endpoint's.
func (a *Attempt) UsePrefill(prefill *datastore.Endpoint) { a.prefill = prefill }

// PrefillFailed notes that the attempt failed because its prefill pod did (the decode pod's
// sidecar answered 5xx for it): End records the failure against the prefill pod's passive
// health, not the decode pod's, which only relayed it.
func (a *Attempt) PrefillFailed() { a.prefillFailed = a.prefill != nil }

// Decision is the decision the attempt tries.
func (a *Attempt) Decision() *Decision { return a.d }

// Endpoint is the endpoint the attempt was sent to.
func (a *Attempt) Endpoint() *datastore.Endpoint { return a.ep }

// Context is the attempt's context: the request's, with the attempt's upstream span when
// tracing is on. The traceparent sent to the model server is that span's (see Inject).
func (a *Attempt) Context() context.Context { return a.ctx }

// Inject writes the attempt's traceparent (and tracestate) into carrier: the model server's
// request headers (HTTP proxy) or the header mutations Envoy applies (ext_proc). It does
// nothing when tracing is off, so the client's traceparent, if any, passes through unchanged.
func (p *Pipeline) Inject(a *Attempt, carrier propagation.TextMapCarrier) {
	if a.span != nil {
		p.tracer.Inject(a.ctx, carrier)
	}
}

// Begin starts an attempt on ep: counts it in flight, starts the clock and, when tracing is
// on, the attempt's upstream span (a child of the span in ctx).
func (p *Pipeline) Begin(ctx context.Context, d *Decision, ep *datastore.Endpoint) *Attempt {
	ep.AddInFlight(1)
	ep.AddPrefill(1, int64(d.Request.PromptTokens))
	a := &Attempt{d: d, ep: ep, sentAt: p.now(), ctx: ctx}
	a.ctx, a.span = p.startUpstream(ctx, d, ep)
	a.meter.UseBudget(p.bodies)
	a.meter.Reset(a.sentAt, false)
	return a
}

// Respond notes the response status and body kind (SSE or JSON); call it when headers arrive.
func (a *Attempt) Respond(status int, sse bool) {
	a.status = status
	a.meter.Reset(a.sentAt, sse)
	if a.span != nil && a.span.IsRecording() {
		a.span.SetAttributes(attribute.Int(tracing.AttrStatus, status), attribute.Bool(tracing.AttrStreamed, sse))
	}
}

// Observe meters a chunk of the response body that arrived at now and runs the FirstToken hooks
// (when the scheduler has them) as soon as the first token is seen.
func (p *Pipeline) Observe(ctx context.Context, a *Attempt, chunk []byte, now time.Time) {
	a.meter.Write(chunk, now)
	if a.sawFirst || a.meter.Tokens() == 0 {
		return
	}
	a.sawFirst = true
	a.ep.AddPrefill(-1, -int64(a.d.Request.PromptTokens))
	if a.span != nil && a.span.IsRecording() {
		a.span.AddEvent(
			tracing.EventFirstToken,
			trace.WithAttributes(telemetry.Milliseconds(tracing.AttrTTFT, a.meter.TTFT())),
		)
	}
	if h, ok := p.hooks.(firstTokenHook); ok {
		h.FirstToken(ctx, a.d.Request, &framework.ResponseInfo{Endpoint: a.ep, Status: a.status, TTFT: a.meter.TTFT(),
			CachedTokens: -1, PromptTokens: a.d.Request.PromptTokens, OutputTokens: 1,
			ClientStalled: a.clientStalled(now)})
	}
}

// End finishes an attempt: status is the pod's HTTP status (0 if none), err a transport error
// that is the pod's fault (nil when the client went away). It updates in-flight counts, passive
// health, metrics and the PostResponse hooks, and wakes flow control.
func (p *Pipeline) End(ctx context.Context, a *Attempt, status int, err error, final bool) {
	now := p.now()
	a.ep.AddInFlight(-1)
	if !a.sawFirst {
		a.ep.AddPrefill(-1, -int64(a.d.Request.PromptTokens))
	}
	a.observeHealth(status, err, now)
	m := a.meter.Finish()
	if m.Unmetered != "" {
		p.metrics.unmetered.WithLabelValues(m.Unmetered).Inc()
		p.log.Debug("response passed on unmetered: its usage is unknown", "request", a.d.Request.ID,
			"endpoint", a.ep.Name, "reason", m.Unmetered)
	}
	info := &framework.ResponseInfo{
		Endpoint: a.ep, Status: status, Err: err, CachedTokens: m.CachedTokens,
		PromptTokens: m.PromptTokens, OutputTokens: m.OutputTokens, TTFT: m.TTFT, MeanITL: m.MeanITL,
		ClientStalled: a.clientStalled(now),
	}
	if info.ClientStalled {
		p.metrics.clientStalled.Inc()
		p.log.Debug("client held the answer back: its latency is not learned", "request", a.d.Request.ID,
			"endpoint", a.ep.Name, "client_wait", a.clientWait, "attempt", now.Sub(a.sentAt))
	}
	if info.PromptTokens < 0 {
		info.PromptTokens = a.d.Request.PromptTokens
	}
	if p.hooks != nil {
		p.hooks.PostResponse(context.WithoutCancel(ctx), a.d.Request, info)
	}
	p.flow.Notify()
	if final {
		finishTenant(a.d, status, err, m)
		code := countedStatus(status, err)
		p.metrics.observe(a.d, code, now, m)
		if slo := a.d.Request.SLO; !slo.IsZero() {
			var ttft time.Duration // from arrival at the gateway, across retries and queueing
			if m.TTFT > 0 {
				ttft = a.sentAt.Sub(a.d.Started) + m.TTFT
			}
			p.metrics.slo.finished(a.d.objective, slo, code, ttft, m)
		}
	}
	endUpstream(a.span, status, err, m)
	a.span = nil
}

// observeHealth feeds the attempt's result to passive health: the decode pod's, and the prefill
// pod's on success, or only the prefill pod's when it was the one that failed.
func (a *Attempt) observeHealth(status int, err error, now time.Time) {
	switch {
	case a.prefillFailed:
		a.prefill.ObserveResult(status, err, now)
	default:
		a.ep.ObserveResult(status, err, now)
		if a.prefill != nil && err == nil && status/100 == 2 {
			a.prefill.ObserveResult(status, nil, now)
		}
	}
}

// countedStatus is the status label of a finished request: the pod's status, 502 when the pod
// could not be reached, 0 when no status was observed (client gone, or Envoy not sending the
// response phase to ext_proc).
func countedStatus(status int, err error) int {
	if status == 0 && err != nil {
		return http.StatusBadGateway
	}
	return status
}
