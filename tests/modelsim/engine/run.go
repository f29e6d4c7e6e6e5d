package engine

import (
	"context"
	"time"
)

// maxCatchUp is how far (simulated) the loop may fall behind before it gives up catching up and
// restarts its schedule from the current time.
const maxCatchUp = time.Second

// Run drives the engine against clk until ctx is done. Step times are anchored to the schedule:
// each step starts when the previous one was due to end, so a late wake-up is caught up by the next
// steps instead of slowing the simulation down. An idle engine blocks on a channel and uses no CPU.
// Only one Run (or Simulator) may drive an engine.
func (e *Engine) Run(ctx context.Context, clk Clock) error {
	next := clk.Now()
	for {
		dur, busy := e.plan()
		if !busy {
			select {
			case <-e.wake:
			case <-ctx.Done():
				return nil
			}
			next = max(next, clk.Now())
			continue
		}
		end := next + dur
		if err := clk.SleepUntil(ctx, end); err != nil {
			e.commit(end, dur) // keep handles consistent; the caller stops serving anyway
			return nil
		}
		lag := clk.Now() - end
		e.commit(end, dur)
		e.observeLag(lag)
		next = end
		if lag > maxCatchUp {
			next = clk.Now()
			e.mu.Lock()
			e.stats.Dropped += lag
			e.mu.Unlock()
		}
	}
}

// observeLag records how far a step ended from its schedule (negative: early) and logs a warning,
// at most every 10 s of wall time, when it is late by more than Config.LagWarn.
func (e *Engine) observeLag(lag time.Duration) {
	e.mu.Lock()
	e.stats.Lag.observe(max(lag, -lag))
	e.stats.LastLag = lag
	warn := lag > e.cfg.LagWarn && time.Since(e.lastWarn) > 10*time.Second
	if warn {
		e.lastWarn = time.Now()
	}
	e.mu.Unlock()
	if warn {
		e.log.Warn("simulated clock lags behind schedule", "lag", lag, "limit", e.cfg.LagWarn)
	}
}
