package loadgen

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// startProgress writes a progress line every interval until the returned stop is called.
func (r *runner) startProgress() (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(r.cfg.ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintln(r.cfg.Progress, r.progressLine())
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// progressLine is e.g. "loadgen mixed-fleet 12s/1m0s sent=240 | rr: done=230 err=1 inflight=10".
func (r *runner) progressLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "loadgen %s %s/%s sent=%d", r.cfg.Workload.Name,
		time.Since(r.start).Truncate(time.Second), r.cfg.Workload.Duration, r.sent.Load())
	for i, t := range r.targets {
		st := r.state[i]
		fmt.Fprintf(&b, " | %s: done=%d err=%d inflight=%d", t.Name, st.done.Load(), st.errors.Load(), st.inFlight.Load())
	}
	return b.String()
}
