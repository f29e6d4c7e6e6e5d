package poll_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// The testing types are what callers pass.
var (
	_ poll.TB = (*testing.T)(nil)
	_ poll.TB = (*testing.B)(nil)
	_ poll.TB = (*testing.F)(nil)
	_ poll.TB = testing.TB(nil)
)

// fakeTB records what a helper reports instead of stopping the test.
type fakeTB struct {
	helpers  int
	failures []string
}

func (f *fakeTB) Helper() { f.helpers++ }

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}

// check compares the failures a helper reported with want ("" for none) and checks that it
// marked itself a helper.
func (f *fakeTB) check(t *testing.T, want string) {
	t.Helper()
	if f.helpers == 0 {
		t.Error("Helper was not called")
	}
	switch {
	case want == "" && len(f.failures) != 0:
		t.Errorf("failed %q, want no failure", f.failures)
	case want != "" && (len(f.failures) != 1 || f.failures[0] != want):
		t.Errorf("failures %q, want exactly %q", f.failures, want)
	}
}

// after returns a condition that holds from its n-th call on, and its call count.
func after(n int) (func() bool, *int) {
	calls := 0
	return func() bool { calls++; return calls >= n }, &calls
}

func TestUntil(t *testing.T) {
	tests := []struct {
		name      string
		holdsFrom int // 0: never
		timeout   time.Duration
		wantFail  string
	}{
		{name: "holds at once", holdsFrom: 1, timeout: time.Minute},
		{name: "holds at the fourth call", holdsFrom: 4, timeout: time.Minute},
		{name: "holds at once with no time", holdsFrom: 1, timeout: 0},
		{name: "never holds", timeout: 30 * time.Millisecond, wantFail: "timed out after 30ms waiting for the pool to form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cond, calls := after(tt.holdsFrom)
			if tt.holdsFrom == 0 {
				cond = func() bool { *calls++; return false }
			}
			tb := &fakeTB{}
			poll.Until(tb, tt.timeout, cond, "the pool to form")
			tb.check(t, tt.wantFail)
			if tt.holdsFrom > 0 && *calls != tt.holdsFrom {
				t.Errorf("cond called %d times, want %d (it holds from then on)", *calls, tt.holdsFrom)
			}
			if tt.holdsFrom == 0 && *calls < 2 {
				t.Errorf("cond called %d times in %v, want it called again after a pause", *calls, tt.timeout)
			}
		})
	}
}

func TestUntilStateNamesTheLastState(t *testing.T) {
	calls := 0
	tb := &fakeTB{}
	poll.UntilState(tb, 30*time.Millisecond, func() (bool, string) {
		calls++
		return false, fmt.Sprintf("%d members", calls)
	}, "3 members")
	tb.check(t, fmt.Sprintf("timed out after 30ms waiting for 3 members; last: %d members", calls))

	tb = &fakeTB{}
	calls = 0
	poll.UntilState(tb, time.Minute, func() (bool, string) {
		calls++
		return calls == 3, fmt.Sprint(calls)
	}, "the third call")
	tb.check(t, "")
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

func TestUntilNil(t *testing.T) {
	gone := errors.New("the process exited")
	tests := []struct {
		name      string
		timeout   time.Duration
		cond      func(call int) error
		wantCalls int // 0: any
		wantFail  func(calls int) string
	}{{
		name:    "nil at the second call",
		timeout: time.Minute,
		cond: func(call int) error {
			if call < 2 {
				return errors.New("not yet")
			}
			return nil
		},
		wantCalls: 2,
	}, {
		name:    "never nil",
		timeout: 30 * time.Millisecond,
		cond:    func(call int) error { return fmt.Errorf("attempt %d refused", call) },
		wantFail: func(calls int) string {
			return fmt.Sprintf("timed out after 30ms waiting for a write; last error: attempt %d refused", calls)
		},
	}, {
		// Without Stop this would wait an hour.
		name:      "stopped",
		timeout:   time.Hour,
		cond:      func(int) error { return fmt.Errorf("asking: %w", poll.Stop(gone)) },
		wantCalls: 1,
		wantFail:  func(int) string { return "a write: the process exited" },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			tb := &fakeTB{}
			poll.UntilNil(tb, tt.timeout, func() error { calls++; return tt.cond(calls) }, "a write")
			want := ""
			if tt.wantFail != nil {
				want = tt.wantFail(calls)
			}
			tb.check(t, want)
			if tt.wantCalls != 0 && calls != tt.wantCalls {
				t.Errorf("cond called %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	cond, calls := after(3)
	if !poll.Within(time.Minute, cond) || *calls != 3 {
		t.Errorf("Within a condition that holds at its third call: called %d times, want true after 3", *calls)
	}
	start := time.Now()
	if poll.Within(30*time.Millisecond, func() bool { return false }) {
		t.Error("Within a condition that never holds = true")
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Errorf("Within gave up after %v, before its timeout of 30ms", waited)
	}
}

// A condition that never holds is called again and again, but with pauses between the calls:
// in 300 ms that is about a dozen calls (fewer on a busy machine), not thousands.
func TestPausesBetweenCalls(t *testing.T) {
	calls := 0
	poll.Within(300*time.Millisecond, func() bool { calls++; return false })
	if calls < 2 || calls > 50 {
		t.Errorf("a condition that never holds was called %d times in 300 ms, want 2 to 50", calls)
	}
}

type ctxKey struct{}

func TestWait(t *testing.T) {
	refused := errors.New("refused")
	gone := errors.New("exited")
	cause := errors.New("the test is over")
	tests := []struct {
		name      string
		ctx       func() (context.Context, context.CancelFunc)
		cond      func(call int) error
		wantCalls int     // 0: any
		wantIs    []error // the returned error must match each; nil for success
		wantNotIs error
	}{{
		name: "nil at the third call",
		ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Minute)
		},
		cond: func(call int) error {
			if call < 3 {
				return refused
			}
			return nil
		},
		wantCalls: 3,
	}, {
		name: "deadline",
		ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		},
		cond:   func(int) error { return refused },
		wantIs: []error{context.DeadlineExceeded, refused},
	}, {
		name: "cancelled with a cause",
		ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(cause)
			return ctx, func() {}
		},
		cond:      func(int) error { return refused },
		wantCalls: 1,
		wantIs:    []error{cause, refused},
	}, {
		name: "stopped",
		ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		},
		cond:      func(int) error { return poll.Stop(gone) },
		wantCalls: 1,
		wantIs:    []error{gone},
		wantNotIs: context.DeadlineExceeded,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			ctx = context.WithValue(ctx, ctxKey{}, tt.name)
			calls := 0
			err := poll.Wait(ctx, func(got context.Context) error {
				calls++
				if got.Value(ctxKey{}) != tt.name {
					t.Error("cond was not given Wait's context")
				}
				return tt.cond(calls)
			})
			if tt.wantIs == nil && err != nil {
				t.Errorf("Wait = %v, want nil", err)
			}
			for _, want := range tt.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("Wait = %v, want an error that is %v", err, want)
				}
			}
			if tt.wantNotIs != nil && errors.Is(err, tt.wantNotIs) {
				t.Errorf("Wait = %v, which is %v", err, tt.wantNotIs)
			}
			if tt.wantCalls != 0 && calls != tt.wantCalls {
				t.Errorf("cond called %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestStop(t *testing.T) {
	if err := poll.Stop(nil); err != nil {
		t.Errorf("Stop(nil) = %v, want nil", err)
	}
	gone := errors.New("exited")
	if err := poll.Stop(gone); !errors.Is(err, gone) || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Stop(%v) = %v, want an error that is it", gone, err)
	}
}

// Wait suits code that returns errors rather than failing a test, such as a harness waiting for
// a process to serve.
func ExampleWait() {
	ready := time.Now().Add(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := poll.Wait(ctx, func(context.Context) error {
		if time.Now().Before(ready) {
			return errors.New("not serving yet")
		}
		return nil
	})
	fmt.Println(err)
	// Output: <nil>
}
