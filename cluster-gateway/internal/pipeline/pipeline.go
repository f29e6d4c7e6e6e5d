// Package pipeline is the gateway's request decision path, shared by both front doors (the
// HTTP proxy and the Envoy ext_proc server): body-based routing, classification of the request
// from its headers (priority, tenant, hand-back offer), admission by flow control and the
// scheduler, the accounting around each attempt on a model server (in-flight counts, passive
// health, the scheduler's hooks, metering of the response), the request metrics, the refusal of
// request bodies (too large, over the in-flight budget, too slow) and the translation of every
// error into the client's OpenAI-style answer. A front door reads the request, drives a
// Pipeline and renders what it returns; how it forwards the request is its own business.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/contract/body"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/bbr"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/flowcontrol"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tenantlimits"
	"github.com/switchyard-dev/switchyard/contract"
	telemetry "github.com/switchyard-dev/switchyard/telemetry/tracing"
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

// TenantLimiter charges requests to their tenants' limits (the tenantlimits Enforcer): nil and
// nil for a request nothing limits. It must be safe for concurrent use.
type TenantLimiter interface {
	Admit(tenant string, reserve int64) (*tenantlimits.Lease, *tenantlimits.Refusal)
}

// ErrorMapper translates a scheduling error into the client's answer; it returns nil for errors
// it does not know. The app maps the scheduler's sentinels (unknown model 404, no endpoints 503).
type ErrorMapper func(error) *apierror.Error

// Pipeline is the decision path both front doors share: body-based routing, classification,
// admission (scheduling plus flow control) and the accounting around each attempt. It is safe
// for concurrent use.
type Pipeline struct {
	router   *bbr.Router
	flow     Admitter
	hooks    Hooks
	classify flowcontrol.Config
	session  string
	mapErr   ErrorMapper
	metrics  *Metrics
	bodies   *body.Budget
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds of the last budget warning (see RefuseBody)
	ids      atomic.Uint64
	now      func() time.Time
	tracer   *telemetry.Tracer
	tenants  TenantLimiter
}

// Options are the Pipeline's collaborators.
type Options struct {
	// Router parses bodies (required).
	Router *bbr.Router
	// Flow admits requests (required).
	Flow Admitter
	// Hooks are the scheduler's hooks; nil runs none.
	Hooks Hooks
	// Classify supplies the priority and tenant header mapping.
	Classify flowcontrol.Config
	// SessionHeader names the request header that carries a session id (framework.Request's
	// SessionID, over the body's); "" reads no header, only the body.
	SessionHeader string
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
	// Tracer records the scheduling and upstream spans (see docs/gateway.md#tracing); nil
	// records none.
	Tracer *telemetry.Tracer
	// Tenants enforces the tenants' limits (--tenant-limits-file); nil enforces none.
	Tenants TenantLimiter
}

// New returns a Pipeline.
func New(o Options) (*Pipeline, error) {
	if o.Router == nil || o.Flow == nil || o.Metrics == nil {
		return nil, errors.New("pipeline: a router, an admitter and metrics are required")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o.Metrics.slo.init(slices.Sorted(maps.Keys(o.Classify.ObjectivePriorities)))
	return &Pipeline{
		router:   o.Router,
		flow:     o.Flow,
		hooks:    o.Hooks,
		classify: o.Classify,
		session:  o.SessionHeader,
		mapErr:   o.MapError,
		metrics:  o.Metrics,
		bodies:   o.BodyBudget,
		log:      log,
		now:      time.Now,
		tracer:   o.Tracer,
		tenants:  o.Tenants,
	}, nil
}

// Tracer is the pipeline's tracer, which the front doors start their request spans with (nil,
// disabled, when tracing is off).
func (p *Pipeline) Tracer() *telemetry.Tracer { return p.tracer }

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
	// objective is the objective label of a request with latency objectives (objectiveLabel).
	objective string
	// lease is the request's hold on its tenant's limits (nil: none limit it).
	lease *tenantlimits.Lease
}

// Decide routes body, classifies the request from its headers (get returns a value by
// lower-case name), admits it and runs the PreRequest hooks. subset, when non-nil, restricts the
// candidates (Envoy's subset hint). Errors are ready for the client. A decision holds pooled
// memory: the front door calls Done once the request is over.
func (p *Pipeline) Decide(
	ctx context.Context,
	body []byte,
	get func(string) string,
	subset []string,
) (*Decision, *apierror.Error) {
	both := &struct { // one allocation for the two
		d   Decision
		req framework.Request
	}{}
	d, req := &both.d, &both.req
	d.Request, d.Started, req.SubsetHint, req.Body = req, p.now(), subset, body
	p.requestID(req, get)
	routed, err := p.router.Route(body, req)
	if err != nil {
		return nil, p.reject(req, err)
	}
	d.Routed = routed
	return p.decide(ctx, d, get)
}

// DecidePassthrough is Decide for a request on a pass-through path (openai.PassthroughPath):
// it is scheduled on its model alone, with no prompt, so no prefix scoring and no prefix
// learnt. model is the model the front door read (a multipart body's field), or "" to read it
// from body, a JSON body, with the inference paths' reader.
func (p *Pipeline) DecidePassthrough(
	ctx context.Context,
	body []byte,
	model string,
	get func(string) string,
) (*Decision, *apierror.Error) {
	both := &struct {
		d   Decision
		req framework.Request
	}{}
	d, req := &both.d, &both.req
	d.Request, d.Started = req, p.now()
	p.requestID(req, get)
	var err error
	if model == "" {
		model, err = p.router.ParseModel(body)
	}
	if err == nil {
		err = p.router.RouteModel(model, req)
	}
	if err != nil {
		return nil, p.reject(req, err)
	}
	return p.decide(ctx, d, get)
}

// requestID sets req.ID from x-request-id, else a number of the pipeline's own.
func (p *Pipeline) requestID(req *framework.Request, get func(string) string) {
	req.ID = get("x-request-id")
	if req.ID == "" {
		req.ID = strconv.FormatUint(p.ids.Add(1), 36)
	}
}

// decide classifies a routed request from its headers, admits it and runs the PreRequest hooks.
func (p *Pipeline) decide(ctx context.Context, d *Decision, get func(string) string) (*Decision, *apierror.Error) {
	req := d.Request
	var err error
	if req.Priority, req.Tenant, err = p.classify.Classify(get); err == nil {
		req.HandBackAfter, err = flowcontrol.HandBackAfter(get)
	}
	if err == nil {
		req.SLO, err = readSLO(get)
	}
	if err == nil {
		err = p.sessionID(req, get)
	}
	if err != nil {
		p.router.Release(req)
		return nil, p.reject(req, p.badHeader(req, err))
	}
	if d.lease, err = p.admitTenant(req); err != nil {
		p.router.Release(req)
		return nil, p.reject(req, err)
	}
	req.Headers = map[string]string{
		contract.HeaderModelName: req.Model, contract.HeaderBaseModelName: req.BaseModel,
		contract.HeaderPriority: strconv.Itoa(req.Priority), contract.HeaderTenant: req.Tenant,
	}
	req.Arrived = d.Started
	if !req.SLO.IsZero() {
		d.objective = p.objectiveLabel(get(contract.HeaderObjective))
	}
	sctx, span := p.startSchedule(ctx, req, false)
	d.Result, err = p.admit(sctx, req)
	p.endSchedule(span, d.Result, err)
	if err != nil {
		d.lease.Refund()
		p.router.Release(req) // flow control dropped req when Admit returned
		if !req.SLO.IsZero() {
			p.metrics.slo.refused(d.objective, req.SLO)
		}
		return nil, p.reject(req, err)
	}
	if p.hooks != nil {
		p.hooks.PreRequest(ctx, req, d.Result)
	}
	return d, nil
}

// sessionID sets req.SessionID from the session-id header when the request carries one (over
// the body's); a value over contract.MaxSessionID bytes or with a control character is a
// *flowcontrol.HeaderError.
func (p *Pipeline) sessionID(req *framework.Request, get func(string) string) error {
	if p.session == "" {
		return nil
	}
	v := get(p.session)
	sid, err := contract.ParseSessionID(p.session, v)
	if err != nil {
		return &flowcontrol.HeaderError{Header: p.session, Value: v,
			Want: fmt.Sprintf("at most %d bytes without control characters", contract.MaxSessionID)}
	}
	if sid != "" {
		req.SessionID = sid
	}
	return nil
}

// Done releases what d holds: the prompt's prefix hashes go back to the router's pool, to be
// overwritten by another request. Call it once per decision, after its last End and when no
// Reschedule can follow: from then on nothing may read d.Request.PrefixHashes (the scheduler
// and its hooks, including the gossip sketch, copy what they keep). A nil d is ignored.
func (p *Pipeline) Done(d *Decision) {
	if d != nil {
		d.lease.Refund() // no attempt ended final: no model server answered
	}
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

var errNoTarget = errors.New("pipeline: no endpoint available")

// Reschedule asks for a new decision after every target of d failed before answering, and runs
// the PreRequest hooks on it.
func (p *Pipeline) Reschedule(ctx context.Context, d *Decision) (*framework.Result, error) {
	sctx, span := p.startSchedule(ctx, d.Request, true)
	res, err := p.admit(sctx, d.Request)
	p.endSchedule(span, res, err)
	if err == nil && p.hooks != nil {
		p.hooks.PreRequest(ctx, d.Request, res)
	}
	return res, err
}
