package frontdoor_test

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkForwardOverheadOpenLoop sends streaming completions at a fixed open-loop rate
// (arrivals do not wait for answers) to a loopback gateway stand-in, directly and through the
// router's front door and forwarder at the same time: each path gets the full rate, the router's
// arrivals offset by half an interval, so both see the same machine noise. One op is one arrival
// on each path, so ns/op is the arrival interval when the load generator keeps up, and
// allocs/op, B/op and cpu-us/op are per pair of requests (direct + via the router, client and
// servers included). It reports p50/p99 time to first byte (the first token event: the stand-in
// flushes it at once) and end to end for both paths, the router's overhead (differences of the
// same quantiles), and how late the load generator fired (late-p99-us: when it is large, the
// process was starved of CPU and every figure is a measure of the machine). A failed request
// counts as infinitely slow. Run it with -benchtime=3s (or a count, -benchtime=3000x).
func BenchmarkForwardOverheadOpenLoop(b *testing.B) {
	e := newBenchEnv(b)
	for _, rate := range []int{1000, 200} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			paths := []*loadPath{
				{name: "direct", url: e.gateway + "/v1/completions"},
				{name: "router", url: e.router + "/v1/completions"},
			}
			for _, p := range paths {
				p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
				p.fire(benchBody) // open a connection before measuring
				p.reset()
			}
			defer func() {
				for _, p := range paths {
					p.client.CloseIdleConnections()
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			late := openLoop(b.N, paths, benchBody, time.Second/time.Duration(rate))
			cpu = cpuTime() - cpu
			b.StopTimer()
			reportOpenLoop(b, paths, late, cpu)
		})
	}
}

func reportOpenLoop(b *testing.B, paths []*loadPath, late []time.Duration, cpu time.Duration) {
	for _, p := range paths {
		if p.firstErr != nil {
			b.Logf("%s: %d of %d requests failed, the first with: %v", p.name, p.failed, len(p.e2es), p.firstErr)
		}
	}
	direct, router := paths[0].result(), paths[1].result()
	direct.report(b, "direct")
	router.report(b, "router")
	b.ReportMetric(overhead(router.ttfb(0.50), direct.ttfb(0.50)), "overhead-ttfb-p50-us")
	b.ReportMetric(overhead(router.ttfb(0.99), direct.ttfb(0.99)), "overhead-ttfb-p99-us")
	b.ReportMetric(overhead(router.e2e(0.99), direct.e2e(0.99)), "overhead-e2e-p99-us")
	b.ReportMetric(float64(direct.failed+router.failed), "failed")
	slices.Sort(late)
	b.ReportMetric(usec(quantile(late, 0.99)), "late-p99-us")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(len(router.e2es)), "cpu-us/op")
}

// openLoop starts n requests per path, one per path every interval, each path offset by an equal
// share of the interval, waits for every answer, and returns how late each arrival was fired.
func openLoop(n int, paths []*loadPath, body string, interval time.Duration) []time.Duration {
	var wg sync.WaitGroup
	late := make([]time.Duration, 0, n*len(paths))
	start := time.Now()
	for i := range n {
		for j, p := range paths {
			due := start.Add(time.Duration(i)*interval + time.Duration(j)*interval/time.Duration(len(paths)))
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait)
			}
			late = append(late, max(time.Since(due), 0))
			wg.Go(func() { p.fire(body) })
		}
	}
	wg.Wait()
	return late
}

// loadPath is one destination of the open-loop load and its measurements.
type loadPath struct {
	name, url string
	client    *http.Client

	mu       sync.Mutex
	ttfbs    []time.Duration
	e2es     []time.Duration
	failed   int
	firstErr error
}

// fire sends one request and records its time to first body byte and its end-to-end time.
func (p *loadPath) fire(body string) {
	start := time.Now()
	ttfb, err := p.do(body)
	e2e := time.Since(start)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failed++
		p.firstErr = cmp.Or(p.firstErr, err)
		ttfb, e2e = math.MaxInt64, math.MaxInt64
	}
	p.ttfbs = append(p.ttfbs, ttfb)
	p.e2es = append(p.e2es, e2e)
}

func (p *loadPath) do(body string) (time.Duration, error) {
	start := time.Now()
	resp, err := p.client.Post(p.url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var buf [4096]byte
	n, err := io.ReadAtLeast(resp.Body, buf[:], 1)
	ttfb := time.Since(start)
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(string(buf[:n]), "data: {") {
		return 0, fmt.Errorf("%s: first bytes %q are not a token event", p.name, buf[:n])
	}
	rest, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || int(rest)+n < 100 {
		return 0, fmt.Errorf("%s: status %d, %d bytes", p.name, resp.StatusCode, int(rest)+n)
	}
	return ttfb, nil
}

func (p *loadPath) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ttfbs, p.e2es, p.failed, p.firstErr = nil, nil, 0, nil
}

// pathResult holds a path's sorted samples.
type pathResult struct {
	ttfbs, e2es []time.Duration
	failed      int
}

func (p *loadPath) result() pathResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := pathResult{ttfbs: slices.Clone(p.ttfbs), e2es: slices.Clone(p.e2es), failed: p.failed}
	slices.Sort(r.ttfbs)
	slices.Sort(r.e2es)
	return r
}

func (r pathResult) ttfb(q float64) time.Duration { return quantile(r.ttfbs, q) }
func (r pathResult) e2e(q float64) time.Duration  { return quantile(r.e2es, q) }

func (r pathResult) report(b *testing.B, name string) {
	b.ReportMetric(usec(r.ttfb(0.50)), name+"-ttfb-p50-us")
	b.ReportMetric(usec(r.ttfb(0.99)), name+"-ttfb-p99-us")
	b.ReportMetric(usec(r.e2e(0.50)), name+"-e2e-p50-us")
	b.ReportMetric(usec(r.e2e(0.99)), name+"-e2e-p99-us")
}

// quantile is the q-quantile of sorted samples (nearest rank below).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// overhead is router-direct in microseconds, +Inf when the router's figure is a failure.
func overhead(router, direct time.Duration) float64 {
	if router == math.MaxInt64 {
		return math.Inf(1)
	}
	return usec(router) - usec(direct)
}

func usec(d time.Duration) float64 {
	if d == math.MaxInt64 {
		return math.Inf(1)
	}
	return float64(d) / float64(time.Microsecond)
}
