package limiter_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/limiter"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newLimiter(share float64) (*limiter.Limiter, *clock) {
	c := &clock{now: time.Unix(1_000_000_040, 0)} // 20 s into a minute
	cfg := limiter.DefaultConfig()
	cfg.Now = c.Now
	if share > 0 {
		cfg.Share = func() float64 { return share }
	}
	return limiter.New(cfg), c
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
		lim   limiter.Limits
		share float64
		steps []step
	}{
		{"no limits", limiter.Limits{}, 0, []step{{admit: 1 << 40}, {admit: 1 << 40}}},
		{"concurrency", limiter.Limits{MaxConcurrent: 2}, 0, []step{
			{admit: 0}, {admit: 0}, {admit: 0, wantLimit: limiter.LimitConcurrency, wantRetry: time.Second},
			{admit: -1, finish: 0}, {admit: 0}, // a finished request gives its slot back
		}},
		{"concurrency released with unknown usage", limiter.Limits{MaxConcurrent: 1, TokensPerMinute: 1000}, 0, []step{
			{admit: 10}, {admit: 10, wantLimit: limiter.LimitConcurrency},
			{admit: -1, finish: 0, known: false}, {admit: 10},
		}},
		{"requests per second", limiter.Limits{RequestsPerSecond: 2}, 0, []step{
			{admit: 0}, {admit: 0}, {admit: 0, wantLimit: limiter.LimitRequests, wantRetry: 500 * time.Millisecond},
			{advance: 500 * time.Millisecond, admit: 0}, {admit: 0, wantLimit: limiter.LimitRequests},
		}},
		{"fractional rate", limiter.Limits{RequestsPerSecond: 0.5}, 0, []step{
			{admit: 0}, {admit: 0, wantLimit: limiter.LimitRequests, wantRetry: 2 * time.Second},
			{advance: 2 * time.Second, admit: 0},
		}},
		{"tokens reserved up front", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 600}, {admit: 600, wantLimit: limiter.LimitTokens}, {admit: 400},
		}},
		{"reconciled down frees the budget", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 900}, {admit: 200, wantLimit: limiter.LimitTokens},
			{admit: -1, finish: 0, used: 100, known: true}, {admit: 800},
		}},
		{"reconciled up charges the excess", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 100}, {admit: -1, finish: 0, used: 950, known: true}, {admit: 100, wantLimit: limiter.LimitTokens},
		}},
		{"refund of an unanswered request", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 1000}, {admit: -1, finish: 0, refund: true}, {admit: 1000},
		}},
		{"unknown usage keeps the reservation", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 1000}, {admit: -1, finish: 0}, {admit: 1, wantLimit: limiter.LimitTokens},
		}},
		{"sliding window ages the previous minute", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			// 1000 charged at 0:20; at 1:20 the window is one third through: 2/3 of it counts.
			{admit: 1000}, {advance: time.Minute, admit: 400, wantLimit: limiter.LimitTokens, wantRetry: 4 * time.Second},
			{admit: 300},
			{advance: 2 * time.Minute, admit: 1000}, // two windows later nothing counts
		}},
		{"oversized request admitted into an idle window", limiter.Limits{TokensPerMinute: 1000}, 0, []step{
			{admit: 5000}, {admit: 1, wantLimit: limiter.LimitTokens},
		}},
		{"token refusal gives back the request", limiter.Limits{TokensPerMinute: 100, RequestsPerSecond: 1}, 0, []step{
			{admit: 100, wantLimit: "", advance: 0}, {advance: time.Second, admit: 50, wantLimit: limiter.LimitTokens},
			{admit: -1, finish: 0, used: 0, known: true}, {admit: 50},
		}},
		{"a third share", limiter.Limits{TokensPerMinute: 3000, MaxConcurrent: 3, RequestsPerSecond: 3}, 1.0 / 3, []step{
			{admit: 1000}, {admit: 1, wantLimit: limiter.LimitConcurrency},
			{admit: -1, finish: 0, used: 1000, known: true}, {advance: time.Second, admit: 1, wantLimit: limiter.LimitTokens},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, c := newLimiter(tc.share)
			var leases []*limiter.Lease
			for i, s := range tc.steps {
				c.Add(s.advance)
				if s.admit < 0 {
					leases[s.finish].Finish(s.used, s.known, s.refund)
					leases[s.finish].Finish(s.used, s.known, s.refund) // a second Finish does nothing
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

// TestTenantsAreIndependent: one tenant's use does not spend another's budget.
func TestTenantsAreIndependent(t *testing.T) {
	l, _ := newLimiter(0)
	lim := limiter.Limits{MaxConcurrent: 1}
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
	lim := limiter.Limits{MaxConcurrent: 5}
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
				lease.Finish(0, false, false)
			}
		})
	}
	wg.Wait()
	if peak > 5 {
		t.Fatalf("peak in flight %d, want at most 5", peak)
	}
}

func BenchmarkAdmitFinish(b *testing.B) {
	l := limiter.New(limiter.DefaultConfig())
	lim := limiter.Limits{TokensPerMinute: 1 << 50, RequestsPerSecond: 1e6, MaxConcurrent: 1 << 20}
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
				lease.Finish(400, true, false)
			}
			i++
		}
	})
}
