package app

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/gossip"

	"github.com/switchyard-dev/switchyard/global-router/internal/configstore"
	"github.com/switchyard-dev/switchyard/global-router/internal/limiter"
)

// tenantView adapts the config store's watched view to frontdoor.Tenants.
type tenantView struct{ s *configstore.Store }

func (t tenantView) HasAPIKeys() bool { return t.s.Snapshot().HasAPIKeys() }

func (t tenantView) ByKeyDigest(d [32]byte) (string, bool) {
	return t.s.Snapshot().TenantByKeyDigest(d)
}

func (t tenantView) Limits(name string) (limiter.Limits, bool, bool) {
	v := t.s.Snapshot()
	if _, bad := v.UnreadableTenant(name); bad {
		return limiter.Limits{}, false, true
	}
	tn, ok := v.Tenant(name)
	if !ok {
		return limiter.Limits{}, false, false
	}
	return limiter.Limits{TokensPerMinute: tn.GetTokensPerMinute(), RequestsPerSecond: tn.GetRequestsPerSecond(),
		MaxConcurrent: tn.GetMaxConcurrent()}, true, false
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
