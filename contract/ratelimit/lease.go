package ratelimit

import "sync/atomic"

// UsageUnknown is the used argument of Lease.Finish for a request whose usage was not seen.
const UsageUnknown = -1

// Lease is an admitted request's hold on its tenant's budget.
type Lease struct {
	l        *Limiter
	t        *tenant
	reserved int64
	window   int64
	epoch    uint64
	metered  bool
	done     atomic.Bool
}

// Finish ends the request: it gives back its concurrency slot and replaces its token
// reservation with used, the input plus output tokens the model server reported, when known
// (used >= 0). Unknown usage (UsageUnknown: no answer body read, the client gone mid-answer)
// keeps the reservation charged. Finish on a nil or finished lease does nothing; it is safe to
// call from several goroutines (only the first call counts).
func (x *Lease) Finish(used int64) {
	if x == nil || x.done.Swap(true) {
		return
	}
	w, _ := x.l.windowOf(x.l.cfg.Now())
	if x.t.finish(x, used, w) {
		x.l.release(x.t)
	}
}

// Refund ends a request no model server answered: it is charged nothing.
func (x *Lease) Refund() { x.Finish(0) }

// Metered reports whether the lease is charged to a token limit (so its usage counts).
func (x *Lease) Metered() bool { return x != nil && x.metered }

// Reserved is the number of tokens the lease reserved (0 with no token limit).
func (x *Lease) Reserved() int64 {
	if x == nil {
		return 0
	}
	return x.reserved
}
