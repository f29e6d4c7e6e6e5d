// Package publish provides the cluster gateway's gossip publisher. It turns the gateway's live view
// of its pods (scraped metrics, served models and adapters, health, learned speeds, routed
// prefixes, flow-control queue) into the cluster's capacity summary
// (switchyard.gossip.v1.CapacitySummary) and hands it to gossip: at once when a figure moves
// significantly (free KV, queue, ready pods, saturation, predicted TTFT, adapters), at most once
// per MinInterval (250 ms), and otherwise as a heartbeat every Heartbeat (1 s).
package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard-dev/switchyard/contract"
	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Options are a Publisher's optional collaborators. Each source left nil has the documented
// fallback of its interface.
type Options struct {
	// Predictor predicts the reference request's TTFT per pod. Nil: predicted from the pod's
	// queue and running batch with the pod's speeds (the neutral prior when unmeasured).
	Predictor TTFTPredictor
	// Speeds reports learned prefill and decode speeds per pod. Nil: the configured priors.
	Speeds SpeedSource
	// Prefixes reports the hot prefix-block hashes per model. Nil: no prefix sketch.
	Prefixes PrefixSource
	// PrefixSketchSource is what Prefixes reports, stamped on every sketch: ROUTED (the
	// default, RecentPrefixes) or KV_EVENTS (kvevents.ResidentPrefixes).
	PrefixSketchSource gossipv1.PrefixSketchSource
	// Queue reports the gateway's flow-control queue per model. Nil: pods' queues only.
	Queue QueueSource
	// Logger receives the publisher's logs. Nil: discard.
	Logger *slog.Logger
	// Registerer receives the publisher's metrics. Nil: none registered.
	Registerer prometheus.Registerer
	// Now is the clock. Nil: time.Now. Tests inject a fake clock and drive Step.
	Now func() time.Time
}

// Publisher publishes the cluster's capacity summary. Create it with New and run it with Run;
// Build, Step and Notify are safe for concurrent use, before, during and after Run.
type Publisher struct {
	cfg     Config
	view    View
	sink    Sink
	opts    Options
	now     func() time.Time
	log     *slog.Logger
	metrics *metrics
	wake    chan struct{}

	mu            sync.Mutex // serialises Step
	last          *gossipv1.CapacitySummary
	lastPublished time.Time
	lastAttempt   time.Time
	failing       bool // the last publish failed (Run logs transitions only)
}

// New validates cfg and returns a Publisher of view's capacity to sink.
func New(cfg Config, view View, sink Sink, opts Options) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if view == nil || sink == nil {
		return nil, errors.New("publish: a View and a Sink are required")
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, view: view, sink: sink, opts: opts, now: opts.Now, log: opts.Logger,
		metrics: m, wake: make(chan struct{}, 1)}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return p, nil
}

// Run examines the view every CheckInterval (and on Notify) and publishes when due, until ctx is
// done; then it returns nil. Publish failures are counted and logged, and retried after
// MinInterval; they do not stop Run.
func (p *Publisher) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.CheckInterval)
	defer t.Stop()
	for {
		p.logStep(p.Step())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-p.wake:
		}
	}
}

// Notify asks Run to examine the view now rather than at the next tick, e.g. after a burst of
// admissions. Publishing stays limited to once per MinInterval. It never blocks.
func (p *Publisher) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Step examines the view once and publishes when due: the first time, on a significant change
// from the last published summary, or when Heartbeat has passed since it; and never within
// MinInterval of the previous attempt. It reports whether it published. Run calls it; it is
// exported for callers that drive the publisher with their own clock.
func (p *Publisher) Step() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.lastAttempt.IsZero() && now.Sub(p.lastAttempt) < p.cfg.MinInterval {
		return false, nil
	}
	next := p.build(now)
	reason, why := p.due(next, now)
	if reason == "" {
		return false, nil
	}
	p.lastAttempt = now
	p.addSketches(next)
	out, err := p.sink.Publish(next)
	if err != nil {
		p.metrics.errors.Inc()
		return false, fmt.Errorf("publish: capacity summary: %w", err)
	}
	if out == nil {
		out = next
	}
	p.last, p.lastPublished = next, now
	size := proto.Size(out)
	p.metrics.published.WithLabelValues(reason.String()).Inc()
	p.metrics.size.Set(float64(size))
	p.log.Debug(
		"capacity summary published",
		"reason",
		reason.String(),
		"change",
		why,
		"models",
		len(next.GetModels()),
		"bytes",
		size,
	)
	return true, nil
}

// due returns why next should be published now ("" when it should not), and for a change, what
// changed.
func (p *Publisher) due(next *gossipv1.CapacitySummary, now time.Time) (reason contract.Reason, why string) {
	if p.last == nil {
		return contract.ReasonPublishFirst, ""
	}
	if why := p.cfg.change(p.last, next); why != "" {
		return contract.ReasonPublishChange, why
	}
	if now.Sub(p.lastPublished) >= p.cfg.Heartbeat {
		return contract.ReasonPublishHeartbeat, ""
	}
	return "", ""
}

// logStep logs publish failures when they start and stop, not on every retry.
func (p *Publisher) logStep(published bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil && !p.failing:
		p.failing = true
		p.log.Warn("capacity summary not published", "err", err)
	case err != nil:
		p.log.Debug("capacity summary not published", "err", err)
	case published && p.failing:
		p.failing = false
		p.log.Info("capacity summary published again")
	}
}
