package pipeline

import (
	"context"
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
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
}

// Decision is the decision the attempt tries.
func (a *Attempt) Decision() *Decision { return a.d }

// Endpoint is the endpoint the attempt was sent to.
func (a *Attempt) Endpoint() *datastore.Endpoint { return a.ep }

// Begin starts an attempt on ep: counts it in flight and starts the clock.
func (p *Pipeline) Begin(d *Decision, ep *datastore.Endpoint) *Attempt {
	ep.AddInFlight(1)
	a := &Attempt{d: d, ep: ep, sentAt: p.now()}
	a.meter.Reset(a.sentAt, false)
	return a
}

// Respond notes the response status and body kind (SSE or JSON); call it when headers arrive.
func (a *Attempt) Respond(status int, sse bool) {
	a.status = status
	a.meter.Reset(a.sentAt, sse)
}

// Observe meters a chunk of the response body that arrived at now and runs the FirstToken hooks
// (when the scheduler has them) as soon as the first token is seen.
func (p *Pipeline) Observe(ctx context.Context, a *Attempt, chunk []byte, now time.Time) {
	a.meter.Write(chunk, now)
	if a.sawFirst || a.meter.Tokens() == 0 {
		return
	}
	a.sawFirst = true
	if h, ok := p.hooks.(firstTokenHook); ok {
		h.FirstToken(ctx, a.d.Request, &framework.ResponseInfo{Endpoint: a.ep, Status: a.status, TTFT: a.meter.TTFT(),
			CachedTokens: -1, PromptTokens: a.d.Request.PromptTokens, OutputTokens: 1})
	}
}

// End finishes an attempt: status is the pod's HTTP status (0 if none), err a transport error
// that is the pod's fault (nil when the client went away). It updates in-flight counts, passive
// health, metrics and the PostResponse hooks, and wakes flow control.
func (p *Pipeline) End(ctx context.Context, a *Attempt, status int, err error, final bool) {
	now := p.now()
	a.ep.AddInFlight(-1)
	a.ep.ObserveResult(status, err, now)
	m := a.meter.Finish()
	info := &framework.ResponseInfo{
		Endpoint: a.ep, Status: status, Err: err, CachedTokens: m.CachedTokens,
		PromptTokens: m.PromptTokens, OutputTokens: m.OutputTokens, TTFT: m.TTFT, MeanITL: m.MeanITL,
	}
	if info.PromptTokens < 0 {
		info.PromptTokens = a.d.Request.PromptTokens
	}
	if p.hooks != nil {
		p.hooks.PostResponse(context.WithoutCancel(ctx), a.d.Request, info)
	}
	p.flow.Notify()
	if final {
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
