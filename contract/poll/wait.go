package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const (
	// firstPause is the pause after the first call of a condition that does not hold.
	firstPause = time.Millisecond
	// maxPause caps the pauses, which double from firstPause.
	maxPause = 100 * time.Millisecond
)

// nextPause returns the pause after one of d: twice d, at most maxPause.
func nextPause(d time.Duration) time.Duration {
	return min(2*d, maxPause)
}

// Wait calls cond until it returns nil, and returns nil; or until ctx is done, and returns an
// error that wraps both ctx's cause (context.DeadlineExceeded for a timeout) and cond's last
// error. When cond returns an error made by Stop, Wait returns the error Stop was given at once.
// cond is called at least once, with ctx, which it should pass on to what it does.
func Wait(ctx context.Context, cond func(ctx context.Context) error) error {
	err := loop(ctx, func() error { return cond(ctx) })
	if stop, ok := errors.AsType[*stopError](err); ok {
		return stop.err
	}
	return err
}

// Stop wraps err so that Wait and UntilNil give up at once and report err, for a condition that
// can no longer come true (the process being waited on exited). Stop(nil) returns nil.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return &stopError{err: err}
}

// stopError is an error made by Stop.
type stopError struct{ err error }

func (e *stopError) Error() string { return "poll: stopped: " + e.err.Error() }

func (e *stopError) Unwrap() error { return e.err }

// loop calls cond until it returns nil (nil) or an error made by Stop (that error), pausing
// between calls as the package documents; once ctx is done it returns ctx's cause joined with
// cond's last error.
func loop(ctx context.Context, cond func() error) error {
	for pause := firstPause; ; pause = nextPause(pause) {
		err := cond()
		if err == nil {
			return nil
		}
		if _, ok := errors.AsType[*stopError](err); ok {
			return err
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("poll: %w: %w", context.Cause(ctx), err)
		case <-timer.C:
		}
	}
}
