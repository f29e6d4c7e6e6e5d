package datastore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Passive health (outlier detection). The proxy reports the outcome of every request it sent to a
// pod through ObserveResult; a pod whose recent answers are mostly failures is ejected for a
// backoff period, so a pod that fails fast does not look idle and attract traffic.
//
// The policy, chosen to be simple to reason about:
//   - A failure is a connection error or a 5xx status. 429 and other 4xx are answers, not failures
//     (429 is saturation, which the metrics already show). A request the client cancelled
//     (context.Canceled) says nothing about the pod and is not recorded.
//   - The last HealthWindow results are kept. The pod is ejected when at least HealthMinResults of
//     them are known and more than half are failures, or after HealthConsecutiveFailures failures
//     in a row.
//   - The first ejection lasts EjectionBase; each further ejection doubles it, up to EjectionMax.
//     HealthRecoverySuccesses successes in a row after an ejection reset the backoff to EjectionBase.
//   - An ejection clears the window, and results that arrive while the pod is ejected (requests that
//     were already in flight) are ignored, so a returning pod starts with a clean slate.
//   - At most a share of the pool is ejected at once (Envoy's max_ejection_percent; see
//     MaxEjected and WithMaxEjectionPercent): an ejection past the cap is refused and the pod
//     stays in rotation, its failures kept, so the next failure tries again once a slot frees.
//     A failing dependency, or a client provoking errors, cannot empty the pool.
const (
	// HealthWindow is the number of recent results the failure ratio is computed over.
	HealthWindow = 10
	// HealthMinResults is the number of results needed before the ratio rule applies.
	HealthMinResults = 5
	// HealthConsecutiveFailures ejects a pod after this many failures in a row.
	HealthConsecutiveFailures = 5
	// HealthRecoverySuccesses successes in a row reset the ejection backoff.
	HealthRecoverySuccesses = 10
	// EjectionBase is the length of a first ejection.
	EjectionBase = 5 * time.Second
	// EjectionMax caps the ejection backoff.
	EjectionMax = 60 * time.Second
)

// health is the per-endpoint outlier detector. Ejected is lock-free; ObserveResult takes a mutex.
type health struct {
	mu           sync.Mutex
	results      [HealthWindow]bool // true = failure; a ring
	n, pos       int
	consecutive  int
	successes    int
	level        int // ejections since the last recovery
	ejectedUntil atomic.Int64
	ejections    atomic.Int64
	// gate admits ejections against the pool's cap; nil (an endpoint outside a Store) admits all.
	gate ejectionGate
}

// ejectionGate decides whether an endpoint may be ejected now. admit calls eject, under a lock
// shared by the whole pool, when it allows the ejection, so that two pods failing at once
// cannot both take the last slot. It must be safe for concurrent use.
type ejectionGate interface {
	admit(e *Endpoint, now time.Time, eject func()) bool
}

// DefaultMaxEjectionPercent is the share of a pool's endpoints that may be ejected at once
// unless configured otherwise (WithMaxEjectionPercent).
const DefaultMaxEjectionPercent = 50

// MaxEjected is how many of n endpoints (or clusters) may be ejected at once when percent of
// them may: n·percent/100 rounded down, but at least one of two or more when percent > 0, so
// that a failed member of a pair is still avoided. A lone member is never ejected (ejecting it
// would empty the pool) unless percent is 100. percent is clamped to 0..100.
func MaxEjected(n, percent int) int {
	percent = min(max(percent, 0), 100)
	k := n * percent / 100
	if k == 0 && n >= 2 && percent > 0 {
		k = 1
	}
	return k
}

// IsFailure reports whether a proxied result counts against the pod's health.
func IsFailure(status int, err error) bool {
	return err != nil || status >= 500
}

// ObserveResult records the outcome of a request proxied to the pod: status is the HTTP status
// (0 when none arrived) and err the transport error, if any. It is safe for concurrent use.
func (e *Endpoint) ObserveResult(status int, err error, now time.Time) {
	if errors.Is(err, context.Canceled) {
		return
	}
	h := &e.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.observe(IsFailure(status, err), now) {
		return
	}
	if h.gate == nil {
		h.eject(now)
		return
	}
	h.gate.admit(e, now, func() { h.eject(now) })
}

// observe records one result and reports whether an ejection is due. Callers hold mu.
func (h *health) observe(failed bool, now time.Time) bool {
	if now.UnixNano() < h.ejectedUntil.Load() {
		return false
	}
	h.record(failed)
	if !failed {
		h.successes++
		if h.successes >= HealthRecoverySuccesses {
			h.level = 0
		}
		return false
	}
	h.successes = 0
	return h.consecutive >= HealthConsecutiveFailures || h.mostlyFailing()
}

// record appends one result to the window.
func (h *health) record(failed bool) {
	h.results[h.pos] = failed
	h.pos = (h.pos + 1) % HealthWindow
	if h.n < HealthWindow {
		h.n++
	}
	if failed {
		h.consecutive++
	} else {
		h.consecutive = 0
	}
}

// mostlyFailing applies the ratio rule.
func (h *health) mostlyFailing() bool {
	if h.n < HealthMinResults {
		return false
	}
	failures := 0
	for i := range h.n {
		if h.results[i] {
			failures++
		}
	}
	return failures*2 > h.n
}

// eject starts an ejection at now and resets the window.
func (h *health) eject(now time.Time) {
	d := EjectionBase << min(h.level, 8)
	if d > EjectionMax {
		d = EjectionMax
	}
	h.level++
	h.ejectedUntil.Store(now.Add(d).UnixNano())
	h.ejections.Add(1)
	h.n, h.pos, h.consecutive, h.successes = 0, 0, 0, 0
}

// Ejected reports whether the pod is in an ejection backoff at now. It is lock-free.
func (e *Endpoint) Ejected(now time.Time) bool {
	return now.UnixNano() < e.health.ejectedUntil.Load()
}

// EjectedUntil is the end of the current or last ejection (zero time if never ejected).
func (e *Endpoint) EjectedUntil() time.Time {
	ns := e.health.ejectedUntil.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Ejections is the number of times the pod has been ejected.
func (e *Endpoint) Ejections() int64 { return e.health.ejections.Load() }
