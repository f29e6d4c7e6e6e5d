package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/contract"
)

// Admitter places a request on endpoints, queueing while they are saturated (the flowcontrol
// Controller). It must be safe for concurrent use.
type Admitter interface {
	Admit(ctx context.Context, req *framework.Request) (*framework.Result, error)
	// Notify signals that capacity may have freed.
	Notify()
}

// Hooks are the scheduler's plugin hooks. They must be safe for concurrent use.
type Hooks interface {
	PreRequest(ctx context.Context, req *framework.Request, res *framework.Result)
	PostResponse(ctx context.Context, req *framework.Request, info *framework.ResponseInfo)
}

// ErrorMapper translates a scheduling error into the client's answer; it returns nil for errors
// it does not know. The app maps the scheduler's sentinels (unknown model 404, no endpoints 503).
type ErrorMapper func(error) *bbr.Error

// Pipeline is the decision path both front doors share: body-based routing, classification,
// admission (scheduling plus flow control) and the accounting around each attempt. It is safe
// for concurrent use.
type Pipeline struct {
	router   *bbr.Router
	flow     Admitter
	hooks    Hooks
	classify flowcontrol.Config
	mapErr   ErrorMapper
	metrics  *Metrics
	bodies   *body.Budget
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds of the last budget warning (see RefuseBody)
	ids      atomic.Uint64
	now      func() time.Time
}

// PipelineOptions are the Pipeline's collaborators.
type PipelineOptions struct {
	// Router parses bodies (required).
	Router *bbr.Router
	// Flow admits requests (required).
	Flow Admitter
	// Hooks are the scheduler's hooks; nil runs none.
	Hooks Hooks
	// Classify supplies the priority and tenant header mapping.
	Classify flowcontrol.Config
	// MapError translates scheduler errors; nil maps every unknown error to 503.
	MapError ErrorMapper
	// Metrics are the shared request metrics (see NewMetrics); required.
	Metrics *Metrics
	// BodyBudget bounds the request-body memory of both front doors together; nil: no bound
	// beyond each body's limit.
	BodyBudget *body.Budget
	// Logger receives the refusals of request bodies (see RefuseBody) and of bad headers; nil
	// discards them.
	Logger *slog.Logger
}

// NewPipeline returns a Pipeline.
func NewPipeline(o PipelineOptions) (*Pipeline, error) {
	if o.Router == nil || o.Flow == nil || o.Metrics == nil {
		return nil, errors.New("proxy: pipeline needs a router, an admitter and metrics")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{router: o.Router, flow: o.Flow, hooks: o.Hooks, classify: o.Classify, mapErr: o.MapError, metrics: o.Metrics,
		bodies: o.BodyBudget, log: log, now: time.Now}, nil
}

// Decision is an admitted request: what was asked and where it goes.
type Decision struct {
	// Request is the scheduling request.
	Request *framework.Request
	// Result lists the chosen endpoint and fallbacks.
	Result *framework.Result
	// Routed holds the body's streaming settings.
	Routed bbr.Routed
	// Started is when the request reached the gateway.
	Started time.Time
}

// Decide routes body, classifies the request from its headers (get returns a value by
// lower-case name), admits it and runs the PreRequest hooks. subset, when non-nil, restricts the
// candidates (Envoy's subset hint). Errors are ready for the client. A decision holds pooled
// memory: the front door calls Done once the request is over.
func (p *Pipeline) Decide(ctx context.Context, body []byte, get func(string) string, subset []string) (*Decision, *bbr.Error) {
	both := &struct { // one allocation for the two
		d   Decision
		req framework.Request
	}{}
	d, req := &both.d, &both.req
	d.Request, d.Started, req.SubsetHint = req, p.now(), subset
	req.ID = get("x-request-id")
	if req.ID == "" {
		req.ID = strconv.FormatUint(p.ids.Add(1), 36)
	}
	routed, err := p.router.Route(body, req)
	if err != nil {
		return nil, p.reject(req, err)
	}
	d.Routed = routed
	if req.Priority, req.Tenant, err = p.classify.Classify(get); err == nil {
		req.HandBackAfter, err = flowcontrol.HandBackAfter(get)
	}
	if err != nil {
		p.router.Release(req)
		return nil, p.reject(req, p.badHeader(req, err))
	}
	req.Headers = map[string]string{
		contract.HeaderModelName: req.Model, contract.HeaderBaseModelName: req.BaseModel,
		contract.HeaderPriority: strconv.Itoa(req.Priority), contract.HeaderTenant: req.Tenant,
	}
	if d.Result, err = p.admit(ctx, req); err != nil {
		p.router.Release(req) // flow control dropped req when Admit returned
		return nil, p.reject(req, err)
	}
	if p.hooks != nil {
		p.hooks.PreRequest(ctx, req, d.Result)
	}
	return d, nil
}

// Done releases what d holds: the prompt's prefix hashes go back to the router's pool, to be
// overwritten by another request. Call it once per decision, after its last End and when no
// Reschedule can follow: from then on nothing may read d.Request.PrefixHashes (the scheduler
// and its hooks, including the gossip sketch, copy what they keep). A nil d is ignored.
func (p *Pipeline) Done(d *Decision) {
	if d != nil && d.Request != nil {
		p.router.Release(d.Request)
	}
}

// admit schedules req; an empty result counts as no endpoint.
func (p *Pipeline) admit(ctx context.Context, req *framework.Request) (*framework.Result, error) {
	res, err := p.flow.Admit(ctx, req)
	if err == nil && (res == nil || len(res.Targets) == 0) {
		err = errNoTarget
	}
	return res, err
}

var errNoTarget = errors.New("proxy: no endpoint available")

// Reschedule asks for a new decision after every target of d failed before answering, and runs
// the PreRequest hooks on it.
func (p *Pipeline) Reschedule(ctx context.Context, d *Decision) (*framework.Result, error) {
	res, err := p.admit(ctx, d.Request)
	if err == nil && p.hooks != nil {
		p.hooks.PreRequest(ctx, d.Request, res)
	}
	return res, err
}

// firstTokenHook is the optional hook run when a response's first token arrives.
type firstTokenHook interface {
	FirstToken(ctx context.Context, req *framework.Request, info *framework.ResponseInfo)
}

// maxLoggedValue bounds the part of a refused header value that is logged.
const maxLoggedValue = 64

// badHeader logs and counts a request refused for a header flow control cannot accept, and
// returns its 400, naming the header.
func (p *Pipeline) badHeader(req *framework.Request, err error) *bbr.Error {
	var he *flowcontrol.HeaderError
	if !errors.As(err, &he) {
		return bbr.BadRequest(err.Error(), "")
	}
	p.metrics.invalidHeader(he.Header)
	value := he.Value
	if len(value) > maxLoggedValue {
		value = value[:maxLoggedValue] + "..."
	}
	p.log.Info("request refused: invalid header", "request", req.ID, "header", he.Header, "value", value, "want", he.Want)
	return bbr.BadRequest(err.Error(), he.Header)
}

// reject translates err for the client and counts it.
func (p *Pipeline) reject(req *framework.Request, err error) *bbr.Error {
	e := p.Translate(err)
	p.metrics.rejected(req, e.Status)
	return e
}

// Translate maps an error to the client's answer.
func (p *Pipeline) Translate(err error) *bbr.Error {
	var e *bbr.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, flowcontrol.ErrOverflow):
		return bbr.Overloaded(err.Error(), p.classify.RetryAfterSeconds())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &bbr.Error{Status: 499, Type: "cancelled", Code: "client_closed_request", Message: err.Error()}
	}
	if p.mapErr != nil {
		if e := p.mapErr(err); e != nil {
			return e
		}
	}
	return bbr.Unavailable(err.Error(), p.classify.RetryAfterSeconds())
}

// Attempt is one try of a decision on one endpoint. Begin it just before sending, feed it the
// response with Observe, and End it when the response finished (or failed).
type Attempt struct {
	d        *Decision
	ep       *datastore.Endpoint
	sentAt   time.Time
	meter    bbr.Meter
	status   int
	sawFirst bool
}

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
		p.metrics.observe(a.d, countedStatus(status, err), now, m)
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
