package proxy_test

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	openLoopRate     = flag.Int("proxy.rate", 1000, "requests per second per path in BenchmarkProxyOverheadOpenLoop")
	openLoopDuration = flag.Duration(
		"proxy.duration",
		3*time.Second,
		"arrival period per iteration of BenchmarkProxyOverheadOpenLoop",
	)
)

// BenchmarkProxyOverheadOpenLoop sends streaming completions at a fixed open-loop rate (default
// 1,000 requests/s, arrivals do not wait for answers) to a loopback streaming model server,
// directly and through the gateway at the same time: each path gets its own rate, the gateway's
// arrivals offset by half an interval, so both see the same machine noise. It reports p50/p99
// time to first byte and end to end for each path and the p99 differences (the gateway's
// overhead). A failed request counts as infinitely slow. Run it with -benchtime=1x; each
// iteration lasts -proxy.duration.
func BenchmarkProxyOverheadOpenLoop(b *testing.B) {
	up := upstream(b, streamingModel)
	e := newEnv(b, nil, up)
	body := `{"model":"llama","stream":true,"prompt":"` + strings.Repeat("hello world ", 100) + `"}`
	paths := []*loadPath{
		{name: "direct", url: "http://" + up + "/v1/completions"},
		{name: "gateway", url: e.url + "/v1/completions"},
	}
	for _, p := range paths {
		p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
		b.Cleanup(p.client.CloseIdleConnections)
		p.fire(body) // open a connection before measuring
		p.reset()
	}
	interval := time.Second / time.Duration(*openLoopRate)
	cpu := cpuTime()
	for b.Loop() {
		openLoop(paths, body, interval, *openLoopDuration)
	}
	cpu = cpuTime() - cpu
	for _, p := range paths {
		if p.firstErr != nil {
			b.Logf("%s: %d of %d requests failed, the first with: %v", p.name, p.failed, len(p.e2es), p.firstErr)
		}
	}
	direct, gw := paths[0].result(), paths[1].result()
	direct.report(b, "direct")
	gw.report(b, "gw")
	b.ReportMetric(overhead(gw.ttfb(0.99), direct.ttfb(0.99)), "overhead-ttfb-p99-us")
	b.ReportMetric(overhead(gw.e2e(0.99), direct.e2e(0.99)), "overhead-e2e-p99-us")
	b.ReportMetric(overhead(gw.e2e(0.50), direct.e2e(0.50)), "overhead-e2e-p50-us")
	b.ReportMetric(float64(direct.failed+gw.failed), "failed")
	b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(len(gw.e2es)), "cpu-us/pair")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// streamingModel answers a completion as an SSE stream of five token events and a usage event,
// flushing each, with no artificial delay: all measured time is HTTP and proxy work.
func streamingModel(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	for i := range 5 {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"t%d\"}]}\n\n", i)
		_ = rc.Flush()
	}
	fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":300,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n")
}

// openLoop starts one request per path every interval for d, each path offset by an equal share
// of the interval, and waits for every answer.
func openLoop(paths []*loadPath, body string, interval, d time.Duration) {
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; time.Duration(i)*interval < d; i++ {
		for j, p := range paths {
			due := start.Add(time.Duration(i)*interval + time.Duration(j)*interval/time.Duration(len(paths)))
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait)
			}
			wg.Go(func() { p.fire(body) })
		}
	}
	wg.Wait()
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

// overhead is gw-direct in microseconds, +Inf when the gateway's figure is a failure.
func overhead(gw, direct time.Duration) float64 {
	if gw == math.MaxInt64 {
		return math.Inf(1)
	}
	return usec(gw) - usec(direct)
}

func usec(d time.Duration) float64 {
	if d == math.MaxInt64 {
		return math.Inf(1)
	}
	return float64(d) / float64(time.Microsecond)
}
