package app

import (
	"context"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/gossip"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
)

// tenantView adapts the config store's watched view to frontdoor.Tenants.
type tenantView struct{ s *configstore.Store }

func (t tenantView) HasAPIKeys() bool { return t.s.Snapshot().HasAPIKeys() }

func (t tenantView) ByKeyDigest(d [32]byte) (string, bool) {
	return t.s.Snapshot().TenantByKeyDigest(d)
}

func (t tenantView) Limits(name string) (ratelimit.Limits, bool, bool) {
	v := t.s.Snapshot()
	if _, bad := v.UnreadableTenant(name); bad {
		return ratelimit.Limits{}, false, true
	}
	lim, ok := limitsIn(v, name)
	return lim, ok, false
}

// limitsIn returns tenant name's limits in view v, if a readable value is stored.
func limitsIn(v *configstore.View, name string) (ratelimit.Limits, bool) {
	tn, ok := v.Tenant(name)
	if !ok {
		return ratelimit.Limits{}, false
	}
	return ratelimit.Limits{TokensPerMinute: tn.GetTokensPerMinute(), RequestsPerSecond: tn.GetRequestsPerSecond(),
		MaxConcurrent: tn.GetMaxConcurrent()}, true
}

// registerLimiter registers the gauge of the tenants l holds counters for.
func registerLimiter(reg prometheus.Registerer, l *ratelimit.Limiter) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchyard_router_tenant_limiter_tenants",
		Help: "Tenants the router's limiter holds counters for (tenants with limits that sent requests); a tenant " +
			"deleted from etcd, or whose limits changed, is released.",
	}, func() float64 { return float64(l.Tenants()) }))
}

// tenantSync releases the limiter's counters of every tenant deleted from etcd (or whose stored
// value became unreadable) and of every tenant whose limits changed, each time the config store
// publishes a new view (ratelimit.Limiter.Sync), so deleted tenants leave no state behind and new
// limits start from fresh counters.
type tenantSync struct {
	store  *configstore.Store
	limits *ratelimit.Limiter
	log    *slog.Logger
}

// Run syncs the limiter with every new view until ctx ends, then returns nil.
func (s tenantSync) Run(ctx context.Context) error {
	view := s.store.Snapshot()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-view.Replaced():
		}
		view = s.store.Snapshot()
		n := s.limits.Sync(func(name string) (ratelimit.Limits, bool) { return limitsIn(view, name) })
		if n > 0 {
			s.log.Info("tenant limiter state released: tenants deleted or their limits changed",
				"tenants", n, "held", s.limits.Tenants(), "revision", view.Revision())
		}
	}
}

// members lists the gossip membership. *gossip.Node implements it.
type members interface{ Members() []gossip.Member }

// regionShare is the part of every tenant limit one router enforces: 1 over the number of
// routers of its region that gossip sees alive or suspect (itself included), recounted at most
// every shareRefresh.
type regionShare struct {
	region string
	nodes  members
	share  atomic.Uint64 // math.Float64bits of the share
	at     atomic.Int64  // unix nanoseconds of the last count
}

// shareRefresh spaces the recounts of the region's routers.
const shareRefresh = time.Second

func (r *regionShare) Share() float64 {
	now := time.Now().UnixNano()
	if last := r.at.Load(); now-last >= int64(shareRefresh) && r.at.CompareAndSwap(last, now) {
		n := 0
		for _, m := range r.nodes.Members() {
			if m.MetaErr == nil && m.Meta.Role == gossip.RoleRouter && m.Meta.Region == r.region &&
				(m.State == gossip.StateAlive || m.State == gossip.StateSuspect) {
				n++
			}
		}
		r.share.Store(shareBits(1 / float64(max(n, 1))))
	}
	return shareValue(r.share.Load())
}

func shareBits(f float64) uint64  { return math.Float64bits(f) }
func shareValue(b uint64) float64 { return math.Float64frombits(b) }
