package loadgen

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// openLoop sends every scheduled arrival to every target at its instant.
func (r *runner) openLoop(ctx context.Context) {
	reqs := r.reqs
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := range reqs {
		if wait := time.Until(r.start.Add(reqs[i].At)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		body, err := r.encode(&reqs[i])
		n := len(r.targets)
		for k := range n {
			r.launch(ctx, (i+k)%n, &reqs[i], body, err)
		}
		r.sent.Add(1)
	}
}

// closedLoop keeps Concurrency requests in flight per target until the duration has passed.
func (r *runner) closedLoop(ctx context.Context) {
	w := r.cfg.Workload
	gen := workload.NewGenerator(w, r.cfg.Seed)
	deadline := r.start.Add(w.Duration)
	for t := range r.targets {
		var next atomic.Int64
		st := r.state[t]
		for range w.Arrival.Concurrency {
			r.wg.Go(func() {
				for ctx.Err() == nil && time.Now().Before(deadline) {
					req := gen.Request(int(next.Add(1) - 1))
					req.At = time.Since(r.start)
					if t == 0 {
						r.sent.Add(1)
					}
					st.inFlight.Add(1)
					body, err := r.encode(&req)
					r.send(ctx, t, &req, body, err)
					st.inFlight.Add(-1)
				}
			})
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(deadline)):
	}
}

// encode builds the request body once for every target.
func (r *runner) encode(req *workload.Request) ([]byte, error) {
	return EncodeRequest(req, r.cfg.Workload.Stream, r.cfg.Workload.IgnoreEOS)
}

// launch starts request req to target t in its own goroutine, or records it as overload.
func (r *runner) launch(ctx context.Context, t int, req *workload.Request, body []byte, encErr error) {
	st := r.state[t]
	if st.inFlight.Load() >= int64(r.cfg.MaxInFlight) {
		s := r.newSample(req)
		s.fail(ErrOverload, fmt.Sprintf("%d requests already in flight", r.cfg.MaxInFlight))
		r.record(t, s)
		return
	}
	st.inFlight.Add(1)
	r.wg.Go(func() {
		defer st.inFlight.Add(-1)
		r.send(ctx, t, req, body, encErr)
	})
}

// send performs req (encoded as body, or failed to encode with encErr) against target t and
// records the sample.
func (r *runner) send(ctx context.Context, t int, req *workload.Request, body []byte, encErr error) {
	s := r.newSample(req)
	if encErr != nil {
		s.fail(ErrTransport, encErr.Error())
		r.record(t, s)
		return
	}
	rctx, cancel := context.WithTimeoutCause(ctx, r.cfg.RequestTimeout, errRequestTimeout)
	defer cancel()
	x := exchange{client: r.cfg.Client, url: r.targets[t].endpointURL(req), body: body, stream: r.cfg.Workload.Stream}
	if s.SLOClass > 0 {
		x.header = r.sloHeaders[s.SLOClass-1]
	}
	x.do(rctx, &s)
	r.cfg.Logger.Debug("request done", "target", r.targets[t].Name, "index", s.Index,
		"status", s.Status, "error", s.Error, "ttft", s.TTFT, "e2e", s.E2E)
	r.record(t, s)
}

func (r *runner) newSample(req *workload.Request) Sample {
	return Sample{
		Index: req.Index, Region: req.Region, Model: req.Model, PromptTokens: req.PromptTokens, MaxTokens: req.MaxTokens,
		Scheduled: req.At, Sent: time.Since(r.start),
		SLOClass: r.cfg.Workload.SLOClassOf(r.cfg.Seed, req.Index) + 1,
	}
}

// record stores a finished sample.
func (r *runner) record(t int, s Sample) {
	st := r.state[t]
	end := int64(s.Sent + s.E2E)
	for {
		cur := r.end.Load()
		if end <= cur || r.end.CompareAndSwap(cur, end) {
			break
		}
	}
	st.done.Add(1)
	if !s.OK() {
		st.errors.Add(1)
	}
	st.mu.Lock()
	st.samples = append(st.samples, s)
	st.mu.Unlock()
}

// result collects the samples, ordered by request index.
func (r *runner) result() *Result {
	w := r.cfg.Workload
	res := &Result{
		Workload: w.Name, Seed: r.cfg.Seed, Rate: w.MeanRate(), Duration: w.Duration,
		Started: r.start, Elapsed: time.Duration(r.end.Load()),
		Trace: traceInfo(w, len(r.reqs)), SLO: w.SLO, SLOClasses: w.SLOHeaders,
	}
	if w.IsTrace() {
		res.Rate = float64(len(r.reqs)) / w.Duration.Seconds()
	}
	for i, t := range r.targets {
		st := r.state[i]
		st.mu.Lock()
		samples := st.samples
		st.mu.Unlock()
		sort.Slice(samples, func(a, b int) bool { return samples[a].Index < samples[b].Index })
		u := t.URL
		if u == "" {
			u = t.firstURL()
		}
		res.Targets = append(res.Targets, TargetResult{Name: t.Name, URL: u, Samples: samples})
	}
	return res
}
