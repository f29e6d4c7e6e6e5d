package fleet_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/fleet"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// BenchmarkFleet32 runs 32 h100 pods in one process at time-scale 1.0, fed by 300 streaming
// requests/s in aggregate (Poisson arrivals, ~1,000-token prompts, 100-300 output tokens, mean 200)
// for 10 s of arrivals, and reports how far the simulated clocks strayed from their schedule: the
// p50 and p99 of per-step deviation, in ms, and the p99 as a fraction of the mean step duration
// (target < 5%). As a reference for the machine's own scheduling delay, a probe goroutine in the
// same process sleeps on a plain 12 ms timer throughout and reports its p99 overshoot.
func BenchmarkFleet32(b *testing.B) {
	if testing.Short() {
		b.Skip("fleet benchmark runs for over 10 s")
	}
	for b.Loop() {
		runFleetLoad(b, 32, 300, 10*time.Second)
	}
}

func runFleetLoad(b *testing.B, pods int, rate float64, arrivals time.Duration) {
	cfgs := make([]server.Config, pods)
	for i := range cfgs {
		c := server.DefaultConfig()
		c.Listen, c.Model, c.Seed = "127.0.0.1:0", "llama", uint64(i+1)
		cfgs[i] = c
	}
	f, err := fleet.New(cfgs, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	if err := f.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	cpu0, wall0 := cpuTime(), time.Now()
	probeCtx, stopProbe := context.WithCancel(ctx)
	probe := make(chan time.Duration, 1)
	go func() { probe <- timerProbe(probeCtx, 12*time.Millisecond) }()
	tokens, failed := drive(f.Addrs(), rate, arrivals)
	cores := (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds()
	stopProbe()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	lag, step := mergeLag(f)
	p99 := lag.Quantile(0.99)
	var dropped time.Duration
	for _, s := range f.Servers() {
		dropped += s.Snapshot().Stats.Dropped
	}
	// The share of real time the simulated clocks kept: 1 when no pod ever gave up catching up.
	b.ReportMetric(1-dropped.Seconds()/(float64(pods)*time.Since(wall0).Seconds()), "sim-time-frac")
	b.ReportMetric(lag.Quantile(0.5)*1000, "lag-p50-ms")
	b.ReportMetric(p99*1000, "lag-p99-ms")
	b.ReportMetric(p99/step, "lag-p99-frac")
	b.ReportMetric(step*1000, "mean-step-ms")
	b.ReportMetric(float64(tokens)/arrivals.Seconds(), "tokens/s")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(cores, "cpu-cores")
	b.ReportMetric(float64(<-probe)/1e6, "probe-p99-ms")
}

// timerProbe sleeps on a timer of period d until ctx ends and returns the p99 of its overshoot.
func timerProbe(ctx context.Context, d time.Duration) time.Duration {
	var over []time.Duration
	t := time.NewTimer(d)
	for {
		start := time.Now()
		t.Reset(d)
		select {
		case <-t.C:
			over = append(over, time.Since(start)-d)
		case <-ctx.Done():
			if len(over) == 0 {
				return 0
			}
			slices.Sort(over)
			return over[len(over)*99/100]
		}
	}
}

// drive sends Poisson arrivals round robin over addrs and waits for every stream to finish.
func drive(addrs []string, rate float64, d time.Duration) (tokens, failed int64) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0}}
	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	var tok, fail atomic.Int64
	start := time.Now()
	next := time.Duration(0)
	for i := 0; next < d; i++ {
		time.Sleep(time.Until(start.Add(next)))
		body := fmt.Sprintf(`{"model":"llama","prompt":"%s","max_tokens":%d,"ignore_eos":true,"stream":true}`,
			promptText(rng, 4000), 100+rng.IntN(201))
		url := "http://" + addrs[i%len(addrs)] + "/v1/completions"
		wg.Go(func() {
			n, err := stream(client, url, body)
			tok.Add(n)
			if err != nil {
				fail.Add(1)
			}
		})
		next += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
	}
	wg.Wait()
	return tok.Load(), fail.Load()
}

func promptText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "w%d ", rng.Uint32())
	}
	return b.String()[:n]
}

func stream(client *http.Client, url, body string) (int64, error) {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var n int64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: {") {
			n++
		}
	}
	return n, sc.Err()
}

// mergeLag sums the pods' lag histograms and returns it with the mean step duration in seconds.
func mergeLag(f *fleet.Fleet) (engine.Histogram, float64) {
	var lag engine.Histogram
	var steps uint64
	var total time.Duration
	for _, s := range f.Servers() {
		st := s.Snapshot().Stats
		if lag.Counts == nil {
			lag = engine.Histogram{Bounds: st.Lag.Bounds, Counts: make([]uint64, len(st.Lag.Counts))}
		}
		for i, c := range st.Lag.Counts {
			lag.Counts[i] += c
		}
		lag.Count += st.Lag.Count
		lag.Sum += st.Lag.Sum
		steps += st.Steps
		total += st.StepTime
	}
	if steps == 0 {
		return lag, 1
	}
	return lag, (total / time.Duration(steps)).Seconds()
}
