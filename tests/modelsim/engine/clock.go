package engine

import (
	"context"
	"time"
)

// Clock is the engine's notion of simulated time, measured from the clock's epoch. The engine loop
// computes how long each step takes and asks the clock to wait until the step's end.
// Implementations used by Run must be safe for concurrent use: handlers read Now while the loop sleeps.
type Clock interface {
	// Now returns the simulated time elapsed since the epoch.
	Now() time.Duration
	// SleepUntil returns once simulated time has reached t, or with ctx's error.
	SleepUntil(ctx context.Context, t time.Duration) error
}

// ScaledClock runs simulated time against the wall clock: one simulated second lasts Scale real
// seconds (Scale 0.1 runs ten times faster than real time).
//
// Timers fire late by a systematic amount (the runtime's poller sleeps in whole milliseconds, and
// a busy machine adds scheduling delay), so SleepUntil wakes early by an estimate of that overshoot:
// the running median of recent overshoots, capped at maxSlack. Wake-ups then scatter around the
// scheduled time instead of always trailing it.
type ScaledClock struct {
	epoch time.Time
	scale float64
	timer *time.Timer
	slack time.Duration // SleepUntil's early-wake estimate (real time); used by one goroutine
}

// Bounds of the early-wake estimate: the cap, and the step by which the median tracker moves.
const (
	maxSlack  = 2 * time.Millisecond
	slackStep = 20 * time.Microsecond
)

// NewScaledClock returns a clock whose epoch is now. scale must be > 0.
func NewScaledClock(scale float64) *ScaledClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &ScaledClock{epoch: time.Now(), scale: scale, timer: t}
}

// Now returns the simulated time since the epoch.
func (c *ScaledClock) Now() time.Duration {
	return time.Duration(float64(time.Since(c.epoch)) / c.scale)
}

// Real converts a simulated duration into the wall-clock duration it lasts.
func (c *ScaledClock) Real(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.scale)
}

// Sleep waits for the simulated duration d (scaled to wall time), or until ctx is done. It is safe
// for concurrent use (each call has its own timer).
func (c *ScaledClock) Sleep(ctx context.Context, d time.Duration) error {
	rd := c.Real(d)
	if rd <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(rd)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SleepUntil waits on a timer (no busy waiting) until about simulated time t: it may return up to
// the early-wake estimate before t. Only one goroutine may call it at a time per clock because the
// timer and the estimate are reused (the engine loop); others use Sleep.
func (c *ScaledClock) SleepUntil(ctx context.Context, t time.Duration) error {
	d := c.Real(t-c.Now()) - c.slack
	if d <= 0 {
		return ctx.Err()
	}
	c.timer.Reset(d)
	select {
	case <-c.timer.C:
	case <-ctx.Done():
		c.timer.Stop()
		return ctx.Err()
	}
	// Track the median overshoot of the timer: up a step when it fired later than asked, down a
	// step when it fired on time.
	over := c.Real(c.Now()-t) + c.slack
	if over > c.slack {
		c.slack = min(c.slack+slackStep, maxSlack)
	} else {
		c.slack = max(c.slack-slackStep, 0)
	}
	return nil
}

// VirtualClock is a discrete-event clock: SleepUntil jumps straight to the requested time. It is
// for single-goroutine simulations (see Simulator) and is not safe for concurrent use.
type VirtualClock struct {
	now time.Duration
}

// Now returns the current virtual time.
func (c *VirtualClock) Now() time.Duration { return c.now }

// SleepUntil advances virtual time to t (never backwards).
func (c *VirtualClock) SleepUntil(ctx context.Context, t time.Duration) error {
	if t > c.now {
		c.now = t
	}
	return ctx.Err()
}
