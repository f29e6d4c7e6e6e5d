package tenantlimits

import (
	"sync"
	"time"
)

// Which limit refused a request: the limit label of the refusal metric, as the router names it.
const (
	LimitTokens      = "tokens_per_minute"
	LimitRequests    = "requests_per_second"
	LimitConcurrency = "max_concurrent"
)

// concurrencyRetryAfter is the Retry-After of a refusal for concurrency, which no clock computes.
const concurrencyRetryAfter = time.Second

// Refusal says why a request was refused and when to try again.
type Refusal struct {
	// Tenant is the tenant named in the answer (the request's, even when charged to Others).
	Tenant string
	// Limit is the limit that refused it (LimitTokens, LimitRequests, LimitConcurrency).
	Limit string
	// RetryAfter is when the request would fit, at the rate the limit refills.
	RetryAfter time.Duration
}

// counters are one tenant's counts, behind their own lock.
type counters struct {
	mu       sync.Mutex
	inFlight int64
	// bucket is the request bucket's level (-1: full, not yet used) and refilled its last refill.
	bucket   float64
	refilled time.Time
	// window is the index of the current minute; cur and prev the tokens charged in it and in
	// the one before.
	window    int64
	cur, prev int64
}

// admit charges one request reserving reserve tokens to c under lim at now, or refuses it.
func (c *counters) admit(lim Limits, reserve int64, now time.Time) (int64, int64, string, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lim.MaxConcurrent > 0 && c.inFlight >= lim.MaxConcurrent {
		return 0, 0, LimitConcurrency, concurrencyRetryAfter
	}
	if lim.RequestsPerSecond > 0 {
		if wait := c.take(now, lim.RequestsPerSecond); wait > 0 {
			return 0, 0, LimitRequests, wait
		}
	}
	var w int64
	if lim.TokensPerMinute > 0 {
		budget := lim.TokensPerMinute
		reserve = min(max(reserve, 0), budget) // a large request fits an idle window
		var frac float64
		w, frac = windowOf(now)
		c.roll(w)
		used := float64(c.prev)*(1-frac) + float64(c.cur)
		if excess := used + float64(reserve) - float64(budget); excess > 0 {
			if lim.RequestsPerSecond > 0 {
				c.bucket = min(max(lim.RequestsPerSecond, 1), c.bucket+1) // give the request back
			}
			return 0, 0, LimitTokens, c.tokenWait(frac, excess)
		}
		c.cur += reserve
	} else {
		reserve = -1 // not metered
	}
	c.inFlight++
	return reserve, w, "", 0
}

// windowOf returns the index of the minute now falls in and how far into it now is.
func windowOf(now time.Time) (int64, float64) {
	ns, w := now.UnixNano(), int64(time.Minute)
	return ns / w, float64(ns%w) / float64(w)
}

// roll moves the token windows forward to window w.
func (c *counters) roll(w int64) {
	switch w {
	case c.window:
	case c.window + 1:
		c.prev, c.cur = c.cur, 0
	default:
		if w > c.window {
			c.prev, c.cur = 0, 0
		}
	}
	c.window = max(w, c.window)
}

// tokenWait is how long until excess tokens of the sliding count have aged out.
func (c *counters) tokenWait(frac, excess float64) time.Duration {
	win := float64(time.Minute)
	if prev := float64(c.prev); prev > 0 && prev*(1-frac) >= excess {
		return time.Duration(excess / prev * win)
	}
	wait := (1 - frac) * win
	excess -= float64(c.prev) * (1 - frac)
	if cur := float64(c.cur); cur > 0 {
		wait += min(excess/cur, 1) * win
	}
	return time.Duration(wait)
}

// take takes one request from the bucket refilled at rate per second (capacity one second's
// worth, at least 1); it returns 0, or how long until one is there.
func (c *counters) take(now time.Time, rate float64) time.Duration {
	capacity := max(rate, 1)
	if c.bucket < 0 || c.refilled.IsZero() {
		c.bucket = capacity
	} else if dt := now.Sub(c.refilled).Seconds(); dt > 0 {
		c.bucket = min(capacity, c.bucket+dt*rate)
	}
	c.refilled = now
	if c.bucket >= 1 {
		c.bucket--
		return 0
	}
	return time.Duration((1 - c.bucket) / rate * float64(time.Second))
}

// finish ends a request that reserved reserved tokens in window w (reserved -1: not metered):
// its slot is given back and, when used is known (>= 0), the reservation replaced by used.
func (c *counters) finish(reserved, w, used int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight--
	if reserved < 0 || used < 0 {
		return
	}
	cw, _ := windowOf(now)
	c.roll(cw)
	delta := used - reserved
	switch {
	case w == c.window:
		c.cur = max(c.cur+delta, 0)
	case w == c.window-1:
		c.prev = max(c.prev+delta, 0)
	case delta > 0: // reserved longer ago: charge what was used beyond it now
		c.cur += delta
	}
}

// used returns the sliding token count at now and the requests in flight.
func (c *counters) used(now time.Time) (int64, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, frac := windowOf(now)
	c.roll(w)
	return int64(float64(c.prev)*(1-frac)+0.5) + c.cur, c.inFlight
}
