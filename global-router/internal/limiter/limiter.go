// Package limiter enforces per-tenant budgets at the router's front door: requests per second (a
// token bucket holding one second's worth), requests in flight, and input plus output tokens per
// minute over a sliding window. A request reserves its token estimate when it is admitted
// (Admit) and reconciles it with the usage the model server reported when it ends (Lease.Finish),
// which also gives back its concurrency slot. A router enforces its share of each limit
// (Config.Share): the region's routers split every tenant's budget between them.
package limiter

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

// Which limit refused a request: the limit label of the refusal metric.
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
	// Share returns the part of each limit this router enforces, in (0, 1]; nil is 1. It is
	// read on every admission, so a change (a router joining) applies at once.
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

// Limiter holds every tenant's counters. It is safe for concurrent use.
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

// tenant is one tenant's counters, behind its own lock.
type tenant struct {
	mu sync.Mutex
	// inFlight counts admitted requests not yet finished.
	inFlight int64
	// tokens is the request bucket's level and refilled when it was last refilled.
	tokens   float64
	refilled time.Time
	// window is the index of the current token window; cur and prev the tokens charged in it
	// and in the one before.
	window    int64
	cur, prev int64
}

func (l *Limiter) tenant(name string) *tenant {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tenants[name]
	if t == nil {
		t = &tenant{tokens: -1}
		l.tenants[name] = t
	}
	return t
}

// Forget drops the counters of a tenant that is no longer configured.
func (l *Limiter) Forget(name string) {
	l.mu.Lock()
	delete(l.tenants, name)
	l.mu.Unlock()
}

// share returns the part of the limits this router enforces.
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

// Admit admits a request of tenant under lim, reserving reserve tokens (its input estimate plus
// its output bound), or refuses it. A reservation larger than the whole token budget is cut to
// the budget, so that a large request is admitted into an idle window rather than never. The
// returned lease must be finished exactly once.
func (l *Limiter) Admit(name string, lim Limits, reserve int64) (*Lease, *Refusal) {
	share := l.share()
	now := l.cfg.Now()
	t := l.tenant(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	if lim.MaxConcurrent > 0 && t.inFlight >= int64(math.Ceil(float64(lim.MaxConcurrent)*share)) {
		return nil, &Refusal{Limit: LimitConcurrency, RetryAfter: l.cfg.ConcurrencyRetryAfter}
	}
	if lim.RequestsPerSecond > 0 {
		if wait := t.takeRequest(now, lim.RequestsPerSecond*share); wait > 0 {
			return nil, &Refusal{Limit: LimitRequests, RetryAfter: wait}
		}
	}
	lease := &Lease{l: l, t: t}
	if lim.TokensPerMinute > 0 {
		budget := float64(lim.TokensPerMinute) * share * l.cfg.Window.Minutes()
		reserve = min(max(reserve, 0), int64(budget))
		w, frac := l.windowOf(now)
		t.roll(w)
		used := float64(t.prev)*(1-frac) + float64(t.cur)
		if used+float64(reserve) > budget {
			t.giveBackRequest(lim.RequestsPerSecond * share)
			return nil, &Refusal{Limit: LimitTokens, RetryAfter: l.tokenWait(t, frac, used+float64(reserve)-budget)}
		}
		t.cur += reserve
		lease.reserved, lease.window, lease.metered = reserve, w, true
	}
	t.inFlight++
	return lease, nil
}

// windowOf returns the index of the token window now falls in and how far into it now is.
func (l *Limiter) windowOf(now time.Time) (int64, float64) {
	ns, w := now.UnixNano(), int64(l.cfg.Window)
	return ns / w, float64(ns%w) / float64(w)
}

// roll moves t's token windows forward to window w.
func (t *tenant) roll(w int64) {
	switch w {
	case t.window:
	case t.window + 1:
		t.prev, t.cur = t.cur, 0
	default:
		t.prev, t.cur = 0, 0
	}
	t.window = max(w, t.window)
}

// tokenWait is how long until excess tokens of the sliding count have aged out: the previous
// window's weight falls as the current one passes, then the current one's in the next.
func (l *Limiter) tokenWait(t *tenant, frac, excess float64) time.Duration {
	win := float64(l.cfg.Window)
	if prev := float64(t.prev); prev > 0 && prev*(1-frac) >= excess {
		return time.Duration(excess / prev * win)
	}
	wait := (1 - frac) * win
	excess -= float64(t.prev) * (1 - frac)
	if cur := float64(t.cur); cur > 0 {
		wait += min(excess/cur, 1) * win
	}
	return time.Duration(wait)
}

// takeRequest takes one request from the bucket refilled at rate per second (capacity one
// second's worth, at least 1); it returns 0, or how long until one is there.
func (t *tenant) takeRequest(now time.Time, rate float64) time.Duration {
	capacity := max(rate, 1)
	if t.tokens < 0 || t.refilled.IsZero() {
		t.tokens = capacity
	} else if dt := now.Sub(t.refilled).Seconds(); dt > 0 {
		t.tokens = min(capacity, t.tokens+dt*rate)
	}
	t.refilled = now
	if t.tokens >= 1 {
		t.tokens--
		return 0
	}
	return time.Duration((1 - t.tokens) / rate * float64(time.Second))
}

// giveBackRequest returns the request taken by a request another limit then refused.
func (t *tenant) giveBackRequest(rate float64) {
	if rate > 0 {
		t.tokens = min(max(rate, 1), t.tokens+1)
	}
}

// Lease is an admitted request's hold on its tenant's budget.
type Lease struct {
	l        *Limiter
	t        *tenant
	reserved int64
	window   int64
	metered  bool
	done     bool
}

// Finish ends the request: it gives back its concurrency slot and replaces its token
// reservation with used, the input plus output tokens the model server reported, when known.
// Unknown usage (no answer body read, the client gone mid-answer) keeps the reservation charged,
// except with refund, for a request no cluster answered, which is charged nothing. Finish on a
// nil or finished lease does nothing.
func (x *Lease) Finish(used int64, known, refund bool) {
	if x == nil || x.done {
		return
	}
	x.done = true
	t := x.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if !x.metered {
		return
	}
	switch {
	case refund:
		used = 0
	case !known:
		return
	}
	w, _ := x.l.windowOf(x.l.cfg.Now())
	t.roll(w)
	delta := used - x.reserved
	switch {
	case x.window == t.window:
		t.cur = max(t.cur+delta, 0)
	case x.window == t.window-1:
		t.prev = max(t.prev+delta, 0)
	case delta > 0: // reserved longer ago: charge what was used beyond it now
		t.cur += delta
	}
}

// Reserved is the number of tokens the lease reserved (0 with no token limit).
func (x *Lease) Reserved() int64 { return x.reserved }
