package ratelimit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/ratelimit"
)

// TestUsed: the sliding count holds the reservations in flight, then the reported usage; a large
// reservation is cut to the budget but still needs an idle window; unknown usage keeps the
// (cut) reservation charged.
func TestUsed(t *testing.T) {
	l, c := newLimiter(0)
	lim := ratelimit.Limits{TokensPerMinute: 1000}
	lease, ref := l.Admit("tok", lim, 700)
	if ref != nil {
		t.Fatal(ref)
	}
	if used, inFlight := l.Used("tok"); used != 700 || inFlight != 1 {
		t.Fatalf("in flight: charged %d with %d in flight, want 700 and 1", used, inFlight)
	}
	if _, ref := l.Admit("tok", lim, 400); ref == nil || ref.Limit != ratelimit.LimitTokens || ref.RetryAfter <= 0 {
		t.Fatalf("over the reservation: %+v, want tokens_per_minute", ref)
	}
	lease.Finish(300)
	if used, inFlight := l.Used("tok"); used != 300 || inFlight != 0 {
		t.Fatalf("charged %d with %d in flight, want 300 and 0", used, inFlight)
	}
	if big, ref := l.Admit("tok", lim, 5000); ref == nil {
		big.Refund()
		t.Fatal("a reservation over what is left was admitted")
	}
	c.Add(2 * time.Minute) // the window has aged out
	big, ref := l.Admit("tok", lim, 5000)
	if ref != nil {
		t.Fatalf("a large request into an idle window: %+v", ref)
	}
	if big.Reserved() != 1000 || !big.Metered() {
		t.Fatalf("reserved %d (metered %v), want the budget 1000", big.Reserved(), big.Metered())
	}
	big.Finish(ratelimit.UsageUnknown)
	if used, _ := l.Used("tok"); used != 1000 {
		t.Fatalf("charged %d, want the reservation 1000", used)
	}
	if used, inFlight := l.Used("nobody"); used != 0 || inFlight != 0 {
		t.Fatalf("a tenant never seen: %d, %d", used, inFlight)
	}
}

// TestClockStepsBack: a clock that steps back a window frees no tokens (the router's copy once
// zeroed the counts then).
func TestClockStepsBack(t *testing.T) {
	l, c := newLimiter(0)
	lim := ratelimit.Limits{TokensPerMinute: 1000}
	if _, ref := l.Admit("acme", lim, 1000); ref != nil {
		t.Fatal(ref)
	}
	c.Add(-time.Minute)
	if _, ref := l.Admit("acme", lim, 1); ref == nil || ref.Limit != ratelimit.LimitTokens {
		t.Fatalf("after the clock stepped back: %+v, want tokens_per_minute", ref)
	}
}

// TestConcurrentFinish: a lease finished from two goroutines at once gives back one slot.
func TestConcurrentFinish(t *testing.T) {
	l, _ := newLimiter(0)
	lim := ratelimit.Limits{MaxConcurrent: 2}
	keep, _ := l.Admit("acme", lim, 0)
	for range 100 {
		lease, ref := l.Admit("acme", lim, 0)
		if ref != nil {
			t.Fatal(ref)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { lease.Finish(ratelimit.UsageUnknown) })
		}
		wg.Wait()
		if _, inFlight := l.Used("acme"); inFlight != 1 {
			t.Fatalf("%d in flight after one of two finished, want 1", inFlight)
		}
	}
	keep.Refund()
}

// TestForget: a forgotten tenant's counters are released (Tenants shows it) and start afresh;
// its requests in flight keep their slots until they end, and then its entry goes, unless it
// was admitted again.
func TestForget(t *testing.T) {
	lim := ratelimit.Limits{TokensPerMinute: 1000, MaxConcurrent: 2, RequestsPerSecond: 1}
	t.Run("idle tenant released at once", func(t *testing.T) {
		l, _ := newLimiter(0)
		lease, _ := l.Admit("gone", lim, 1000)
		lease.Finish(1000)
		if _, ref := l.Admit("other", lim, 0); ref != nil {
			t.Fatal(ref)
		}
		if n := l.Tenants(); n != 2 {
			t.Fatalf("%d tenants, want 2", n)
		}
		l.Forget("gone")
		l.Forget("never-seen")
		if n := l.Tenants(); n != 1 {
			t.Fatalf("%d tenants after Forget, want 1", n)
		}
		if used, inFlight := l.Used("gone"); used != 0 || inFlight != 0 {
			t.Fatalf("forgotten tenant still charged %d with %d in flight", used, inFlight)
		}
		if _, ref := l.Admit("gone", lim, 1000); ref != nil {
			t.Fatalf("a forgotten tenant did not start afresh: %+v", ref)
		}
	})
	t.Run("in flight keep their slots, entry goes with the last", func(t *testing.T) {
		l, _ := newLimiter(0)
		a, _ := l.Admit("acme", lim, 100)
		l.Forget("acme")
		if n := l.Tenants(); n != 1 {
			t.Fatalf("%d tenants with a request in flight, want 1", n)
		}
		if used, inFlight := l.Used("acme"); used != 0 || inFlight != 1 {
			t.Fatalf("after Forget: charged %d with %d in flight, want 0 and 1", used, inFlight)
		}
		a.Finish(100)
		if n := l.Tenants(); n != 0 {
			t.Fatalf("%d tenants after the last request ended, want 0", n)
		}
	})
	t.Run("new limits count the old requests in flight", func(t *testing.T) {
		l, _ := newLimiter(0)
		newLim := ratelimit.Limits{TokensPerMinute: 1000, MaxConcurrent: 2}
		a, _ := l.Admit("acme", lim, 900)
		l.Forget("acme") // its limits changed
		b, ref := l.Admit("acme", newLim, 300)
		if ref != nil {
			t.Fatalf("under the new limits: %+v", ref)
		}
		if _, ref := l.Admit("acme", newLim, 0); ref == nil || ref.Limit != ratelimit.LimitConcurrency {
			t.Fatalf("the old request's slot was lost: %+v, want max_concurrent", ref)
		}
		a.Finish(600) // its reservation was dropped: what it used is charged now
		if used, inFlight := l.Used("acme"); used != 900 || inFlight != 1 {
			t.Fatalf("charged %d with %d in flight, want 900 and 1", used, inFlight)
		}
		b.Finish(100)
		if used, _ := l.Used("acme"); used != 700 {
			t.Fatalf("charged %d, want 700", used)
		}
		if n := l.Tenants(); n != 1 {
			t.Fatalf("%d tenants, want the one admitted again", n)
		}
	})
}

// TestForgetRacesAdmit: Forget, Admit and Finish from many goroutines keep the counts whole: when
// everything has finished, nothing is in flight and Forget releases every tenant.
func TestForgetRacesAdmit(t *testing.T) {
	l, _ := newLimiter(0)
	lim := ratelimit.Limits{MaxConcurrent: 1 << 20, TokensPerMinute: 1 << 40}
	names := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				name := names[(g+i)%len(names)]
				if i%7 == 0 {
					l.Forget(name)
					continue
				}
				lease, ref := l.Admit(name, lim, 10)
				if ref != nil {
					t.Error(ref)
					return
				}
				lease.Finish(5)
			}
		})
	}
	wg.Wait()
	for _, name := range names {
		if _, inFlight := l.Used(name); inFlight != 0 {
			t.Fatalf("tenant %s: %d in flight after all finished", name, inFlight)
		}
		l.Forget(name)
	}
	if n := l.Tenants(); n != 0 {
		t.Fatalf("%d tenants after forgetting all, want 0", n)
	}
}

// TestSync: tenants the configuration no longer lists, or lists with other limits, are
// forgotten; the others keep their counters.
func TestSync(t *testing.T) {
	l, _ := newLimiter(0)
	lim := ratelimit.Limits{TokensPerMinute: 1000}
	for _, name := range []string{"kept", "deleted", "changed"} {
		lease, ref := l.Admit(name, lim, 500)
		if ref != nil {
			t.Fatal(ref)
		}
		lease.Finish(500)
	}
	config := map[string]ratelimit.Limits{"kept": lim, "changed": {TokensPerMinute: 2000}, "unseen": lim}
	n := l.Sync(func(name string) (ratelimit.Limits, bool) {
		c, ok := config[name]
		return c, ok
	})
	if n != 2 || l.Tenants() != 1 {
		t.Fatalf("forgot %d, %d tenants held; want 2 forgotten and 1 held", n, l.Tenants())
	}
	if used, _ := l.Used("kept"); used != 500 {
		t.Fatalf("kept tenant charged %d, want its 500", used)
	}
	for _, name := range []string{"deleted", "changed"} {
		if used, _ := l.Used(name); used != 0 {
			t.Fatalf("%s still charged %d", name, used)
		}
	}
	if n := l.Sync(func(string) (ratelimit.Limits, bool) { return lim, true }); n != 0 {
		t.Fatalf("an unchanged configuration forgot %d tenants", n)
	}
}
