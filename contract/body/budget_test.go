package body_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchyard-dev/switchyard/contract/body"
)

func TestBudget(t *testing.T) {
	b := body.NewBudget(100)
	for _, step := range []struct {
		reserve int64
		ok      bool
		inUse   int64
	}{{60, true, 60}, {50, false, 60}, {40, true, 100}, {1, false, 100}, {0, true, 100}} {
		err := b.Reserve(step.reserve)
		if (err == nil) != step.ok || b.InUse() != step.inUse {
			t.Fatalf("Reserve(%d) = %v with %d in use; want ok=%v and %d", step.reserve, err, b.InUse(), step.ok, step.inUse)
		}
		if err != nil && !errors.Is(err, body.ErrBudgetExhausted) {
			t.Fatalf("Reserve(%d) = %v, want ErrBudgetExhausted", step.reserve, err)
		}
	}
	b.Release(100)
	if b.InUse() != 0 || b.Refused() != 2 || b.Limit() != 100 {
		t.Fatalf("in use %d, refused %d, limit %d", b.InUse(), b.Refused(), b.Limit())
	}
	var none *body.Budget
	if err := none.Reserve(1 << 40); err != nil || none.InUse() != 0 || none.Limit() != 0 {
		t.Fatalf("a nil budget: %v", err)
	}
	none.Release(1 << 40)
}

func TestBudgetPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"zero limit":       func() { body.NewBudget(0) },
		"release too much": func() { body.NewBudget(10).Release(1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

// TestBudgetConcurrent reserves and releases from many goroutines: the reservations granted
// never exceed the budget, and everything comes back.
func TestBudgetConcurrent(t *testing.T) {
	const limit = 1000
	b := body.NewBudget(limit)
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 2000 {
				n := int64(1 + (g*7+i)%97)
				if b.Reserve(n) != nil {
					continue
				}
				now := held.Add(n)
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				held.Add(-n)
				b.Release(n)
			}
		})
	}
	wg.Wait()
	if peak.Load() > limit || b.InUse() != 0 {
		t.Fatalf("peak %d held (limit %d), %d still in use", peak.Load(), limit, b.InUse())
	}
}
