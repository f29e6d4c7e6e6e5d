package ratelimit

import (
	"sync"
	"time"
)

// tenant is one tenant's counters, behind their own lock. Lock order: the Limiter's, then a
// tenant's.
type tenant struct {
	name string
	mu   sync.Mutex
	// lim are the limits of its last admission.
	lim Limits
	// inFlight counts admitted requests not yet finished.
	inFlight int64
	// bucket is the request bucket's level (-1: full, not used yet) and refilled when it was
	// last refilled.
	bucket   float64
	refilled time.Time
	// window is the index of the current token window; cur and prev the tokens charged in it
	// and in the one before.
	window    int64
	cur, prev int64
	// epoch counts the resets: a lease reserved before the last one finds its reservation gone.
	epoch uint64
	// forgotten: Forget ran while requests were in flight, and the entry goes with the last of
	// them; gone: the entry is no longer the Limiter's (an admission that finds it looks again).
	forgotten, gone bool
}

// reset starts the request bucket and the token windows afresh.
func (t *tenant) reset() {
	t.bucket, t.refilled = -1, time.Time{}
	t.window, t.cur, t.prev = 0, 0, 0
	t.epoch++
}

// roll moves the token windows forward to window w. A clock that steps back keeps the counts
// (it never frees tokens).
func (t *tenant) roll(w int64) {
	switch {
	case w <= t.window:
		return
	case w == t.window+1:
		t.prev, t.cur = t.cur, 0
	default:
		t.prev, t.cur = 0, 0
	}
	t.window = w
}

// tokenWait is how long until excess tokens of the sliding count have aged out: the previous
// window's weight falls as the current one passes (win long, frac of it gone), then the current
// one's in the next.
func (t *tenant) tokenWait(win, frac, excess float64) time.Duration {
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

// take takes one request from the bucket refilled at rate per second (capacity one second's
// worth, at least 1); it returns 0, or how long until one is there.
func (t *tenant) take(now time.Time, rate float64) time.Duration {
	capacity := max(rate, 1)
	if t.bucket < 0 || t.refilled.IsZero() {
		t.bucket = capacity
	} else if dt := now.Sub(t.refilled).Seconds(); dt > 0 {
		t.bucket = min(capacity, t.bucket+dt*rate)
	}
	t.refilled = now
	if t.bucket >= 1 {
		t.bucket--
		return 0
	}
	return time.Duration((1 - t.bucket) / rate * float64(time.Second))
}

// giveBack returns the request take took for a request another limit then refused.
func (t *tenant) giveBack(rate float64) {
	if rate > 0 {
		t.bucket = min(max(rate, 1), t.bucket+1)
	}
}

// finish ends lease x: its slot is given back and, when used is known (>= 0) and x was
// metered, its reservation replaced by used (at window now). It reports whether the tenant was
// forgotten and this was its last request.
func (t *tenant) finish(x *Lease, used, now int64) (last bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if x.metered && used >= 0 {
		t.reconcile(x, used, now)
	}
	return t.forgotten && t.inFlight == 0
}

// reconcile replaces x's reservation by used, at window now. A reservation that a reset
// dropped is not given back: what was used is charged now.
func (t *tenant) reconcile(x *Lease, used, now int64) {
	t.roll(now)
	reserved, w := x.reserved, x.window
	if x.epoch != t.epoch {
		reserved, w = 0, t.window
	}
	delta := used - reserved
	switch {
	case w == t.window:
		t.cur = max(t.cur+delta, 0)
	case w == t.window-1:
		t.prev = max(t.prev+delta, 0)
	case delta > 0: // reserved longer ago: charge what was used beyond it now
		t.cur += delta
	}
}
