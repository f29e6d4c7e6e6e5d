// Package dnssync keeps the regional name's Route 53 latency records in step with region drains.
// One latency record per configured region (SetIdentifier = the region) exists exactly while
// the region is not drained; a drained region's record is deleted and put back on undrain.
// Only the leader of an etcd election writes; the other routers stay idle. The sync owns only
// the records of its name and type whose set identifier is a configured region and never
// touches any other record of the zone.
package dnssync

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// DrainSource gives the configuration in force; *configstore.Store implements it. Snapshot must
// be safe for concurrent use and never return nil.
type DrainSource interface {
	Snapshot() *configstore.View
}

// LeaderCheck tells whether this router leads the DNS-sync election; *configstore.Elector
// implements it. IsLeader must be safe for concurrent use.
type LeaderCheck interface {
	IsLeader() bool
}

// Syncer reconciles the records while Run runs.
type Syncer struct {
	cfg     Config
	zone    string
	api     Route53API
	drains  DrainSource
	leader  LeaderCheck
	logger  *slog.Logger
	metrics *metrics
}

// New returns a syncer writing through api. Its collectors are registered on reg (none when nil).
func New(
	cfg Config,
	api Route53API,
	drains DrainSource,
	leader LeaderCheck,
	logger *slog.Logger,
	reg prometheus.Registerer,
) (*Syncer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if api == nil || drains == nil || leader == nil {
		return nil, errors.New("dnssync: nil Route 53 client, drain source or leader check")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	zone := strings.TrimPrefix(cfg.HostedZoneID, "/hostedzone/")
	return &Syncer{cfg: cfg, zone: zone, api: api, drains: drains, leader: leader, logger: logger, metrics: m}, nil
}

// Run reconciles while this router leads: at once when it becomes leader, on every
// configuration change, every Period, and after a failure once the backoff has passed. It
// returns nil when ctx is done.
func (s *Syncer) Run(ctx context.Context) error {
	view := s.drains.Snapshot()
	poll := time.NewTicker(s.cfg.LeaderPoll)
	defer poll.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lp loopState
	defer s.metrics.leader.Set(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-view.Replaced():
			view = s.drains.Snapshot()
			lp.due = true
		case <-poll.C:
		case <-timer.C:
			lp.due = true
		}
		s.checkLeader(&lp)
		if !lp.due || !lp.leading || !view.Loaded() {
			continue
		}
		if wait := time.Until(lp.notBefore); wait > 0 {
			timer.Reset(wait) // backing off: a change waits for the pause to end
			continue
		}
		lp.due = false
		timer.Reset(s.step(ctx, view, &lp))
	}
}

// loopState is Run's state between events.
type loopState struct {
	leading   bool      // leader as of the last check
	due       bool      // a reconciliation is wanted
	failures  int       // consecutive failures, throttling counting double
	notBefore time.Time // no call before this (backoff)
}

// checkLeader updates lp.leading; a router that just became leader reconciles at once.
func (s *Syncer) checkLeader(lp *loopState) {
	now := s.leader.IsLeader()
	if now == lp.leading {
		return
	}
	lp.leading = now
	lp.due = lp.due || now
	s.metrics.leader.Set(b2f(now))
}

// step runs one reconciliation and returns the pause before the next one.
func (s *Syncer) step(ctx context.Context, view *configstore.View, lp *loopState) time.Duration {
	err := s.reconcile(ctx, view)
	if err == nil || ctx.Err() != nil {
		lp.failures = 0
		return s.cfg.Period
	}
	kind := "failed"
	lp.failures++
	if throttled(err) {
		kind = "throttled"
		lp.failures++
	}
	s.metrics.errors.WithLabelValues(kind).Inc()
	d := s.backoff(lp.failures)
	lp.notBefore = time.Now().Add(d)
	s.logger.Warn("dns sync failed; retrying", "kind", kind, "retry_in", d, "err", err)
	return d
}

// backoff returns the pause after n failures: RetryMin doubled n-1 times, at most RetryMax,
// with jitter in its upper half.
func (s *Syncer) backoff(n int) time.Duration {
	d := s.cfg.RetryMin << min(n-1, 30)
	if d <= 0 || d > s.cfg.RetryMax {
		d = s.cfg.RetryMax
	}
	return d/2 + rand.N(d/2+1)
}

// reconcile brings the owned records in line with the drains of view.
func (s *Syncer) reconcile(ctx context.Context, view *configstore.View) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	have, err := s.listOwned(ctx)
	if err != nil {
		return err
	}
	want := s.cfg.desired(view.RegionDrained)
	changes := plan(want, have)
	if len(changes) > 0 {
		if !s.leader.IsLeader() {
			return nil // lost the leadership while listing: the new leader writes
		}
		if err := s.change(ctx, changes); err != nil {
			return err
		}
		s.logChanges(changes, view)
	}
	s.metrics.records.Set(float64(len(want)))
	s.metrics.lastSuccess.Set(float64(time.Now().UnixNano()) / 1e9)
	return nil
}

// logChanges logs and counts an applied batch.
func (s *Syncer) logChanges(changes []types.Change, view *configstore.View) {
	for _, c := range changes {
		s.metrics.changes.WithLabelValues(string(c.Action)).Inc()
		s.logger.Info("dns record changed", "action", string(c.Action), "name", fqdn(s.cfg.RecordName),
			"region", *c.ResourceRecordSet.SetIdentifier, "config_revision", view.Revision())
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
