// Package poll is test support: it waits for a condition that another goroutine or process
// makes true (a watch delivers, a gossip pool forms, a router learns a cluster) and fails the
// test, naming what it waited for and the last state it saw, when the condition does not hold in
// time. It is the one poll loop of the workspace's tests and test harnesses, so every wait backs
// off the same way and every timeout reads the same.
//
// The condition is called at once, then after pauses that start at 1 ms and double up to 100 ms:
// a condition that holds soon is seen soon, and a slow one (an HTTP request, a command run) is not
// called more than ten times a second. Timeouts are the caller's, and should be generous: they
// bound a failure, not a speed.
//
// Until, UntilState and UntilNil fail a test through TB; Within and Wait return the outcome to a
// caller that reports it itself (with a process log, say) or that is not a test. The package
// imports only the standard library, not "testing", so any module may use it.
package poll

import (
	"context"
	"errors"
	"time"
)

// TB is the part of testing.TB that Until, UntilState and UntilNil use; *testing.T, *testing.B
// and *testing.F satisfy it. Fatalf must not return normally when called from the test's
// goroutine (testing's stops the goroutine); the helpers return after calling it regardless, so a
// fake that records the failure sees it once.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// errNotYet is the state of a boolean condition that does not hold yet.
var errNotYet = errors.New("condition not met")

// Until calls cond until it returns true, and fails tb if timeout passes first:
// "timed out after <timeout> waiting for <what>". what names the awaited state ("config
// loaded", "the pool to form").
func Until(tb TB, timeout time.Duration, cond func() bool, what string) {
	tb.Helper()
	if !Within(timeout, cond) {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// UntilState calls cond until it returns ok, and fails tb if timeout passes first, naming what
// and the state that the last call returned: "timed out after <timeout> waiting for <what>;
// last: <state>". state describes what cond saw (a status code, a member count, a key list).
func UntilState(tb TB, timeout time.Duration, cond func() (ok bool, state string), what string) {
	tb.Helper()
	var last string
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := loop(ctx, func() error {
		ok, state := cond()
		last = state
		if ok {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		tb.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
	}
}

// UntilNil calls cond until it returns nil, and fails tb if timeout passes first, naming what and
// the last error: "timed out after <timeout> waiting for <what>; last error: <err>". An error
// made by Stop fails tb at once: "<what>: <err>".
func UntilNil(tb TB, timeout time.Duration, cond func() error, what string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	err := loop(ctx, func() error {
		last = cond()
		return last
	})
	if stop, ok := errors.AsType[*stopError](err); ok {
		tb.Fatalf("%s: %v", what, stop.err)
	} else if err != nil {
		tb.Fatalf("timed out after %v waiting for %s; last error: %v", timeout, what, last)
	}
}

// Within calls cond until it returns true, and reports whether it did before timeout passed. It
// is for a caller that reports a timeout itself, with more than Until says (a process log), or
// for which one is not a failure.
func Within(timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return loop(ctx, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}
