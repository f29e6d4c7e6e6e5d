package ratelimit_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/ratelimit"
)

// clock is a settable clock, in unix nanoseconds.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

func newLimiter(share float64) (*ratelimit.Limiter, *clock) {
	c := &clock{}
	c.ns.Store(time.Unix(1_000_000_040, 0).UnixNano()) // 20 s into a minute
	cfg := ratelimit.DefaultConfig()
	cfg.Now = c.Now
	if share > 0 {
		cfg.Share = func() float64 { return share }
	}
	return ratelimit.New(cfg), c
}

// step is one action on a limiter: advance the clock, then admit (reserve) or finish the n-th
// admitted lease.
type step struct {
	advance time.Duration
	admit   int64 // tokens to reserve; -1: finish instead
	finish  int   // index of the lease to finish
	used    int64
	known   bool
	refund  bool
	// wantLimit is the refusing limit ("" admitted); wantRetry the Retry-After, when non-zero.
	wantLimit string
	wantRetry time.Duration
}

func TestLimiter(t *testing.T) {
	tests := []struct {
		name  string
		lim   ratelimit.Limits
		share float64
		steps []step
	}{
		{"no limits", ratelimit.Limits{}, 0, []step{{admit: 1 << 40}, {admit: 1 << 40}}},
		{"concurrency", ratelimit.Limits{MaxConcurrent: 2}, 0, []step{
			{admit: 0}, {admit: 0}, {admit: 0, wantLimit: ratelimit.LimitConcurrency, wantRetry: time.Second},
			{admit: -1, finish: 0}, {admit: 0}, // a finished request gives its slot back
		}},
		{"concurrency released with unknown usage", ratelimit.Limits{MaxConcurrent: 1, TokensPerMinute: 1000}, 0, []step{
			{admit: 10}, {admit: 10, wantLimit: ratelimit.LimitConcurrency},
			{admit: -1, finish: 0, known: false}, {admit: 10},
		}},
		{"requests per second", ratelimit.Limits{RequestsPerSecond: 2}, 0, []step{
			{admit: 0}, {admit: 0}, {admit: 0, wantLimit: ratelimit.LimitRequests, wantRetry: 500 * time.Millisecond},
			{advance: 500 * time.Millisecond, admit: 0}, {admit: 0, wantLimit: ratelimit.LimitRequests},
		}},
		{"fractional rate", ratelimit.Limits{RequestsPerSecond: 0.5}, 0, []step{
			{admit: 0}, {admit: 0, wantLimit: ratelimit.LimitRequests, wantRetry: 2 * time.Second},
			{advance: 2 * time.Second, admit: 0},
		}},
		{"tokens reserved up front", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 600}, {admit: 600, wantLimit: ratelimit.LimitTokens}, {admit: 400},
		}},
		{"reconciled down frees the budget", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 900}, {admit: 200, wantLimit: ratelimit.LimitTokens},
			{admit: -1, finish: 0, used: 100, known: true}, {admit: 800},
		}},
		{"reconciled up charges the excess", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 100}, {admit: -1, finish: 0, used: 950, known: true}, {admit: 100, wantLimit: ratelimit.LimitTokens},
		}},
		{"refund of an unanswered request", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 1000}, {admit: -1, finish: 0, refund: true}, {admit: 1000},
		}},
		{"unknown usage keeps the reservation", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 1000}, {admit: -1, finish: 0}, {admit: 1, wantLimit: ratelimit.LimitTokens},
		}},
		{"sliding window ages the previous minute", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			// 1000 charged at 0:20; at 1:20 the window is one third through: 2/3 of it counts.
			{admit: 1000}, {advance: time.Minute, admit: 400, wantLimit: ratelimit.LimitTokens, wantRetry: 4 * time.Second},
			{admit: 300},
			{advance: 2 * time.Minute, admit: 1000}, // two windows later nothing counts
		}},
		{"oversized request admitted into an idle window", ratelimit.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 5000}, {admit: 1, wantLimit: ratelimit.LimitTokens},
		}},
		{"token refusal gives back the request", ratelimit.Limits{TokensPerMinute: 100, RequestsPerSecond: 1}, 0, []step{
			{admit: 100, wantLimit: "", advance: 0}, {advance: time.Second, admit: 50, wantLimit: ratelimit.LimitTokens},
			{admit: -1, finish: 0, used: 0, known: true}, {admit: 50},
		}},
		{"a third share", ratelimit.Limits{TokensPerMinute: 3000, MaxConcurrent: 3, RequestsPerSecond: 3}, 1.0 / 3, []step{
			{admit: 1000}, {admit: 1, wantLimit: ratelimit.LimitConcurrency},
			{admit: -1, finish: 0, used: 1000, known: true}, {advance: time.Second, admit: 1, wantLimit: ratelimit.LimitTokens},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, c := newLimiter(tc.share)
			var leases []*ratelimit.Lease
			for i, s := range tc.steps {
				c.Add(s.advance)
				if s.admit < 0 {
					finish(leases[s.finish], s)
					finish(leases[s.finish], s) // a second Finish does nothing
					continue
				}
				lease, ref := l.Admit("acme", tc.lim, s.admit)
				got := ""
				if ref != nil {
					got = ref.Limit
				}
				if got != s.wantLimit {
					t.Fatalf("step %d: refused by %q, want %q", i, got, s.wantLimit)
				}
				if ref != nil && s.wantRetry != 0 &&
					(ref.RetryAfter < s.wantRetry-time.Millisecond || ref.RetryAfter > s.wantRetry+time.Millisecond) {
					t.Fatalf("step %d: RetryAfter %v, want %v", i, ref.RetryAfter, s.wantRetry)
				}
				if ref == nil {
					leases = append(leases, lease)
				}
			}
		})
	}
}

// finish ends lease as step s says: refunded, with its usage, or with its usage unknown.
func finish(lease *ratelimit.Lease, s step) {
	switch {
	case s.refund:
		lease.Refund()
	case s.known:
		lease.Finish(s.used)
	default:
		lease.Finish(ratelimit.UsageUnknown)
	}
}

// TestTenantsAreIndependent: one tenant's use does not spend another's budget.
func TestTenantsAreIndependent(t *testing.T) {
	l, _ := newLimiter(0)
	lim := ratelimit.Limits{MaxConcurrent: 1}
	if _, ref := l.Admit("a", lim, 0); ref != nil {
		t.Fatal(ref)
	}
	if _, ref := l.Admit("b", lim, 0); ref != nil {
		t.Fatalf("tenant b refused by a's use: %v", ref)
	}
}

// TestConcurrentAdmissions: under concurrent use the concurrency limit holds exactly.
func TestConcurrentAdmissions(t *testing.T) {
	l, _ := newLimiter(0)
	lim := ratelimit.Limits{MaxConcurrent: 5}
	var mu sync.Mutex
	inFlight, peak := 0, 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 200 {
				lease, ref := l.Admit("acme", lim, 0)
				if ref != nil {
					continue
				}
				mu.Lock()
				inFlight++
				peak = max(peak, inFlight)
				mu.Unlock()
				mu.Lock()
				inFlight--
				mu.Unlock()
				lease.Finish(ratelimit.UsageUnknown)
			}
		})
	}
	wg.Wait()
	if peak > 5 {
		t.Fatalf("peak in flight %d, want at most 5", peak)
	}
}

func BenchmarkAdmitFinish(b *testing.B) {
	l := ratelimit.New(ratelimit.DefaultConfig())
	lim := ratelimit.Limits{TokensPerMinute: 1 << 50, RequestsPerSecond: 1e6, MaxConcurrent: 1 << 20}
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("tenant-%d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			lease, ref := l.Admit(names[i%len(names)], lim, 500)
			if ref == nil {
				lease.Finish(400)
			}
			i++
		}
	})
}
