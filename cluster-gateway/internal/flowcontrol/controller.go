package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// ErrOverflow is wrapped by every refusal of flow control (queue full, evicted, expired, shut
// down, or saturated with queueing off). Front doors answer it 429 with x-switchyard-overflow: 1.
var ErrOverflow = errors.New("flowcontrol: overflow")

// Scheduler places a request on an endpoint. It must be safe for concurrent use.
type Scheduler interface {
	Schedule(ctx context.Context, req *framework.Request) (*framework.Result, error)
}

// Predictor is implemented by schedulers that can predict a scheduled request's time to first
// token on the endpoint chosen for it (res.Targets[0]), and give back a result that will not be
// sent. Flow control uses it to hand requests back to a router that offers to take them
// elsewhere (framework.Request.HandBackAfter).
type Predictor interface {
	PredictChosen(req *framework.Request, res *framework.Result) (time.Duration, bool)
	Discard(res *framework.Result)
}

// Clock tells the time; tests inject a fake one.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options are the Controller's collaborators.
type Options struct {
	// IsSaturated reports whether a scheduling error means "every candidate is saturated" (the
	// only error that queues). Default framework.IsSaturated: the error is
	// framework.ErrSaturated, which the scheduler returns (as scheduling.ErrSaturated).
	IsSaturated func(error) bool
	// Clock defaults to the system clock.
	Clock Clock
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Controller admits requests: it schedules them at once when possible and queues them otherwise.
// It is safe for concurrent use; Run must be running for queued requests to be retried on ticks.
type Controller struct {
	cfg     Config
	sched   Scheduler
	opts    Options
	metrics *metrics
	wake    chan struct{}

	mu      sync.Mutex
	q       queue
	stopped bool
}

// New returns a Controller.
func New(cfg Config, sched Scheduler, opts Options) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sched == nil {
		return nil, errors.New("flowcontrol: a scheduler is required")
	}
	if opts.IsSaturated == nil {
		opts.IsSaturated = framework.IsSaturated
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Registerer, cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, sched: sched, opts: opts, metrics: m, wake: make(chan struct{}, 1)}, nil
}

// Config returns the configuration.
func (c *Controller) Config() Config { return c.cfg }

// Len is the number of queued requests.
func (c *Controller) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.q.size
}

// Queued is the number of queued requests for model, as a base model or an adapter name.
func (c *Controller) Queued(model string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.q.count(math.MinInt, func(r *framework.Request) bool { return r.BaseModel == model || r.Model == model })
}

// Admit schedules req, waiting in the queue while every candidate is saturated, or while
// requests for the same model at its priority or above already wait there: first come, first
// served. Errors other than saturation come straight from the scheduler; refusals wrap
// ErrOverflow; a cancelled ctx returns ctx.Err().
func (c *Controller) Admit(ctx context.Context, req *framework.Request) (*framework.Result, error) {
	if n := c.waitingAhead(req); n > 0 {
		if req.HandBackAfter > 0 { // it would queue
			return nil, c.handedBack(fmt.Sprintf("%d requests for %s queued ahead", n, req.Model))
		}
		// Room may have freed since the last pass: serve the queue, this request last, at once.
		return c.wait(ctx, req, true)
	}
	res, err := c.sched.Schedule(ctx, req)
	if req.HandBackAfter > 0 {
		if why := c.handBack(ctx, req, res, err); why != "" {
			return nil, c.handedBack(why)
		}
	}
	if err == nil || !c.opts.IsSaturated(err) {
		return res, err
	}
	if !c.cfg.Enabled {
		c.metrics.outcome(contract.ReasonFlowRejected)
		return nil, fmt.Errorf("%w: every endpoint is saturated", ErrOverflow)
	}
	return c.wait(ctx, req, false)
}

// handedBack counts a request given back to its router and returns its refusal.
func (c *Controller) handedBack(why string) error {
	c.metrics.outcome(contract.ReasonFlowHandedBack)
	return fmt.Errorf("%w: handed back: %s", ErrOverflow, why)
}

// waitingAhead counts the queued requests req must not overtake: for the same model (the same
// candidate endpoints) at its priority or above. Room that frees while they wait is theirs first:
// scheduling every new request at once whenever a scrape shows a free slot would serve the queue
// in no order at all, and under sustained overload leave its oldest requests waiting longest.
func (c *Controller) waitingAhead(req *framework.Request) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q.size == 0 {
		return 0
	}
	return c.q.count(req.Priority, func(r *framework.Request) bool { return r.Model == req.Model })
}

// wait queues req and waits for its outcome; dispatch has the queue served at once (Run's next
// pass) rather than at the next signal or tick.
func (c *Controller) wait(
	ctx context.Context,
	req *framework.Request,
	dispatch bool,
) (res *framework.Result, err error) {
	ctx, span := startQueueSpan(ctx, req)
	defer endQueueSpan(span, &err)
	it, err := c.enqueue(req)
	if err != nil {
		return nil, err
	}
	if dispatch {
		c.Notify()
	}
	select {
	case out := <-it.done:
		return out.res, out.err
	case <-ctx.Done():
		return nil, c.cancel(it, ctx.Err())
	}
}

// enqueue adds req to the queue, evicting a lower-priority request when the queue is full.
func (c *Controller) enqueue(req *framework.Request) (*item, error) {
	now := c.opts.Clock.Now()
	it := &item{req: req, enqueued: now, deadline: now.Add(c.cfg.TTL), done: make(chan outcome, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("%w: shutting down", ErrOverflow)
	}
	if c.q.size >= c.cfg.MaxQueue {
		v := c.q.victim(req.Priority)
		if v == nil {
			c.metrics.outcome(contract.ReasonFlowRejected)
			return nil, fmt.Errorf("%w: queue full", ErrOverflow)
		}
		c.finish(
			v,
			outcome{err: fmt.Errorf("%w: evicted by a higher-priority request", ErrOverflow)},
			contract.ReasonFlowEvicted,
			now,
		)
	}
	it.sizeGauge = c.metrics.sizeGauge(req.Priority)
	c.q.push(it)
	it.sizeGauge.Inc()
	return it, nil
}

// cancel removes it after its caller gave up. If it was dispatched meanwhile, the decision is
// dropped (the request was never sent).
func (c *Controller) cancel(it *item, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.q.remove(it) {
		it.sizeGauge.Dec()
		c.metrics.outcome(contract.ReasonFlowCancelled)
	}
	return err
}

// finish removes it from the queue and delivers out. The caller holds c.mu.
func (c *Controller) finish(it *item, out outcome, label contract.Reason, now time.Time) {
	if !c.q.remove(it) {
		return
	}
	it.sizeGauge.Dec()
	c.metrics.outcome(label)
	c.metrics.wait.Observe(now.Sub(it.enqueued).Seconds())
	it.done <- out
}

// Notify signals that capacity may have freed (a request finished, metrics were refreshed). It
// never blocks.
func (c *Controller) Notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run retries queued requests on every Notify and every RetryInterval until ctx is done; then it
// answers every queued request with ErrOverflow and returns nil.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.stop()
			return nil
		case <-t.C:
		case <-c.wake:
		}
		c.Dispatch(ctx)
	}
}

func (c *Controller) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	now := c.opts.Clock.Now()
	for _, it := range c.q.all() {
		c.finish(it, outcome{err: fmt.Errorf("%w: shutting down", ErrOverflow)}, contract.ReasonFlowRejected, now)
	}
}

// handBack says why a request whose router offers to take it elsewhere goes back to it, or ""
// when it stays: it would queue here (every endpoint saturated), or its predicted time to first
// token on the chosen endpoint is above the router's limit. A result handed back is discarded.
func (c *Controller) handBack(ctx context.Context, req *framework.Request, res *framework.Result, err error) string {
	if err != nil {
		if c.opts.IsSaturated(err) {
			return "every endpoint is saturated"
		}
		return ""
	}
	p, ok := c.sched.(Predictor)
	if !ok || res == nil || len(res.Targets) == 0 {
		return ""
	}
	ttft, ok := p.PredictChosen(req, res)
	if c.opts.Logger.Enabled(ctx, slog.LevelDebug) {
		c.opts.Logger.DebugContext(ctx, "hand-back offer", "request", req.ID, "predicted", ttft, "offer", req.HandBackAfter,
			"taken", ok && ttft > req.HandBackAfter)
	}
	if !ok || ttft <= req.HandBackAfter {
		return ""
	}
	p.Discard(res)
	return fmt.Sprintf(
		"predicted time to first token %v, above the %v offered elsewhere",
		ttft.Round(time.Millisecond),
		req.HandBackAfter,
	)
}
