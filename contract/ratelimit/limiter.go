// Package ratelimit enforces per-tenant budgets, the same way at both tiers (the router's front
// door for tenants stored in etcd, the gateway for a --tenant-limits-file): requests per second (a
// token bucket holding one second's worth), requests in flight, and input plus output tokens per
// minute over a sliding window. A request reserves its token estimate when it is admitted (Admit)
// and reconciles it with the usage the model server reported when it ends (Lease.Finish), which
// also gives back its concurrency slot. A limiter may enforce only a share of each limit
// (Config.Share): a region's routers split every tenant's budget between them.
//
// The limiter keeps counters only for the tenants it admitted requests of; Forget releases a
// tenant's when it is deleted or its limits change. It never logs and has no metrics: each binary
// counts refusals in its own names.
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Limits are one tenant's limits; a zero field is no limit.
type Limits struct {
	// TokensPerMinute bounds input plus output tokens per Config.Window (scaled to a minute).
	TokensPerMinute int64
	// RequestsPerSecond bounds admissions per second.
	RequestsPerSecond float64
	// MaxConcurrent bounds requests in flight.
	MaxConcurrent int64
}

// Which limit refused a request: the limit label of both tiers' refusal metrics.
const (
	LimitTokens      = "tokens_per_minute"
	LimitRequests    = "requests_per_second"
	LimitConcurrency = "max_concurrent"
)

// Config tunes a Limiter.
type Config struct {
	// Window is the span the token limit is counted over; TokensPerMinute is scaled to it.
	// Default 1 minute.
	Window time.Duration
	// Share returns the part of each limit this limiter enforces, in (0, 1]; nil, or a value
	// outside that range, is 1. It is read on every admission, so a change (a router joining)
	// applies at once.
	Share func() float64
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// ConcurrencyRetryAfter is the Retry-After of a refusal for concurrency, which no clock can
	// compute. Default 1 s.
	ConcurrencyRetryAfter time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Window: time.Minute, ConcurrencyRetryAfter: time.Second}
}

// Refusal says why a request was refused and when to try again.
type Refusal struct {
	// Limit is the limit that refused it (LimitTokens, LimitRequests, LimitConcurrency).
	Limit string
	// RetryAfter is when the request would fit, at the rate the limit refills.
	RetryAfter time.Duration
}

// Limiter holds every admitted tenant's counters. It is safe for concurrent use.
type Limiter struct {
	cfg     Config
	mu      sync.Mutex
	tenants map[string]*tenant
}

// New returns a limiter; zero fields of cfg take their defaults.
func New(cfg Config) *Limiter {
	def := DefaultConfig()
	if cfg.Window <= 0 {
		cfg.Window = def.Window
	}
	if cfg.ConcurrencyRetryAfter <= 0 {
		cfg.ConcurrencyRetryAfter = def.ConcurrencyRetryAfter
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Limiter{cfg: cfg, tenants: map[string]*tenant{}}
}

// tenantOf returns name's counters, creating them when there are none.
func (l *Limiter) tenantOf(name string) *tenant {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenants[name]
	if t == nil {
		t = &tenant{name: name, bucket: -1}
		l.tenants[name] = t
	}
	return t
}

// share returns the part of the limits this limiter enforces.
func (l *Limiter) share() float64 {
	if l.cfg.Share == nil {
		return 1
	}
	s := l.cfg.Share()
	if !(s > 0) || s > 1 {
		return 1
	}
	return s
}

// Admit admits a request of tenant name under lim, reserving reserve tokens (its input estimate
// plus its output bound), or refuses it. A reservation larger than the whole token budget is cut
// to the budget, so that a large request is admitted into an idle window rather than never. A
// request refused by the token limit gives back what it took of the request bucket. The returned
// lease must be finished (Finish or Refund) exactly once.
func (l *Limiter) Admit(name string, lim Limits, reserve int64) (*Lease, *Refusal) {
	share := l.share()
	now := l.cfg.Now()
	for {
		t := l.tenantOf(name)
		t.mu.Lock()
		if t.gone { // forgotten and dropped between the lookup and the lock: look again
			t.mu.Unlock()
			continue
		}
		lease, ref := l.admit(t, lim, share, reserve, now)
		t.mu.Unlock()
		return lease, ref
	}
}

// admit charges one request to t, whose lock is held.
func (l *Limiter) admit(t *tenant, lim Limits, share float64, reserve int64, now time.Time) (*Lease, *Refusal) {
	if lim.MaxConcurrent > 0 && t.inFlight >= int64(math.Ceil(float64(lim.MaxConcurrent)*share)) {
		return nil, &Refusal{Limit: LimitConcurrency, RetryAfter: l.cfg.ConcurrencyRetryAfter}
	}
	rate := lim.RequestsPerSecond * share
	if rate > 0 {
		if wait := t.take(now, rate); wait > 0 {
			return nil, &Refusal{Limit: LimitRequests, RetryAfter: wait}
		}
	}
	lease := &Lease{l: l, t: t, epoch: t.epoch}
	if lim.TokensPerMinute > 0 {
		budget := float64(lim.TokensPerMinute) * share * l.cfg.Window.Minutes()
		reserve = min(max(reserve, 0), int64(budget))
		w, frac := l.windowOf(now)
		t.roll(w)
		used := float64(t.prev)*(1-frac) + float64(t.cur)
		if excess := used + float64(reserve) - budget; excess > 0 {
			t.giveBack(rate)
			return nil, &Refusal{Limit: LimitTokens, RetryAfter: t.tokenWait(float64(l.cfg.Window), frac, excess)}
		}
		t.cur += reserve
		lease.reserved, lease.window, lease.metered = reserve, w, true
	}
	t.inFlight++
	t.lim = lim
	t.forgotten = false // in use again: the counters are kept after its requests end
	return lease, nil
}

// windowOf returns the index of the token window now falls in and how far into it now is.
func (l *Limiter) windowOf(now time.Time) (int64, float64) {
	ns, w := now.UnixNano(), int64(l.cfg.Window)
	return ns / w, float64(ns%w) / float64(w)
}

// Used returns the tokens tenant name is charged now over the sliding window (reservations of
// requests in flight included), and its requests in flight.
func (l *Limiter) Used(name string) (tokens, inFlight int64) {
	l.mu.Lock()
	t := l.tenants[name]
	l.mu.Unlock()
	if t == nil {
		return 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	w, frac := l.windowOf(l.cfg.Now())
	t.roll(w)
	return int64(math.Round(float64(t.prev)*(1-frac))) + t.cur, t.inFlight
}

// Tenants returns the number of tenants the limiter holds counters for.
func (l *Limiter) Tenants() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tenants)
}

// Forget releases the counters of tenant name, deleted or given new limits: its request bucket
// and its token windows start afresh. Its requests in flight still hold their concurrency slots
// until they finish (a new limit is not overrun by the requests admitted under the old one); the
// tenant's entry is dropped once none is left, unless it was admitted again in between.
func (l *Limiter) Forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenants[name]
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reset()
	if t.inFlight == 0 {
		l.drop(t)
		return
	}
	t.forgotten = true
}

// Sync forgets (Forget) every tenant that limits no longer configures (ok false: deleted, or
// no longer readable) or configures with other limits than those of its last admission, and
// returns how many it forgot. Call it whenever the configuration changes; limits is called
// without the limiter's locks held, once per tenant held.
func (l *Limiter) Sync(limits func(name string) (lim Limits, ok bool)) (forgotten int) {
	l.mu.Lock()
	held := make([]*tenant, 0, len(l.tenants))
	for _, t := range l.tenants {
		held = append(held, t)
	}
	l.mu.Unlock()
	for _, t := range held {
		lim, ok := limits(t.name)
		t.mu.Lock()
		stale := !t.gone && (!ok || lim != t.lim)
		t.mu.Unlock()
		if stale {
			l.Forget(t.name)
			forgotten++
		}
	}
	return forgotten
}

// drop removes t, whose lock is held with l's, from the tenants.
func (l *Limiter) drop(t *tenant) {
	if l.tenants[t.name] == t {
		delete(l.tenants, t.name)
	}
	t.gone = true
}

// release drops t when it was forgotten and its last request has ended.
func (l *Limiter) release(t *tenant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.forgotten && t.inFlight == 0 && !t.gone {
		l.drop(t)
	}
}
