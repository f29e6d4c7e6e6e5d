package body

import (
	"fmt"
	"sync/atomic"
)

// Budget is a process-wide allowance of request-body memory, in bytes: every body buffer reserves
// its capacity from it as it grows and gives it back when the request is done, so the bodies in
// flight at once never hold more than the budget, however many requests are open and whatever
// lengths they declare. A reservation that does not fit fails at once (no waiting: a request that
// cannot be buffered now is better answered 503 than queued behind uploads that may never end).
// A nil *Budget grants everything. A Budget is safe for concurrent use.
type Budget struct {
	limit   int64
	used    atomic.Int64
	refused atomic.Uint64
}

// NewBudget returns a budget of limit bytes. It panics when limit is not positive: a budget of
// nothing would refuse every body (use a nil *Budget for no budget).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		panic(fmt.Sprintf("body: NewBudget(%d): the limit must be positive", limit))
	}
	return &Budget{limit: limit}
}

// Reserve takes n bytes from the budget, or returns a *BudgetError (matching ErrBudgetExhausted)
// and takes nothing when fewer than n are left. Reserving zero or fewer bytes always succeeds.
func (b *Budget) Reserve(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	for {
		used := b.used.Load()
		if used+n > b.limit || used+n < used {
			b.refused.Add(1)
			return &BudgetError{Budget: b.limit, Wanted: n}
		}
		if b.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

// Release gives back n bytes reserved earlier. Releasing more than was reserved is a bug in the
// caller; it panics rather than let the budget drift.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	if b.used.Add(-n) < 0 {
		panic("body: Budget.Release: more released than reserved")
	}
}

// Limit is the budget's size in bytes (0 for a nil budget: no limit).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// InUse is the number of bytes reserved now.
func (b *Budget) InUse() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Refused counts the reservations refused since the budget was made.
func (b *Budget) Refused() uint64 {
	if b == nil {
		return 0
	}
	return b.refused.Load()
}
