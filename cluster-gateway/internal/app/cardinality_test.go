package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// seriesCounts scrapes addr/metrics and counts the samples of each family (a histogram's
// buckets, sum and count under its own name), so a family that grows a series per value shows.
func seriesCounts(t *testing.T, addr string) map[string]int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d", addr, resp.StatusCode)
	}
	families := map[string]bool{}
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			families[strings.Fields(f)[0]] = true
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && families[base] {
				name = base
			}
		}
		out[name]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkBounded fails for every family that grew by more than slack series from before to after.
func checkBounded(t *testing.T, before, after map[string]int, slack int) {
	t.Helper()
	for name, n := range after {
		if n > before[name]+slack {
			t.Errorf("%s grew from %d to %d series", name, before[name], n)
		}
	}
}

// flood sends n requests made by req from workers goroutines over a few keep-alive connections,
// and returns how many got an answer other than a 4xx (each a bug: every one is hostile).
func flood(t *testing.T, n, workers int, req func(i int) *http.Request) int64 {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var next, odd atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				resp, err := client.Do(req(i))
				if err != nil {
					odd.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || resp.StatusCode >= 500 {
					odd.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return odd.Load()
}

// hostileModel is the i-th made-up model name: a plain one, or every fifth with bytes that are
// not UTF-8, or every seventh longer than any label value should be.
func hostileModel(i int) string {
	switch {
	case i%5 == 0:
		return fmt.Sprintf("bad-\xff\xfe-%d", i)
	case i%7 == 0:
		return strings.Repeat("m", 300) + fmt.Sprint(i)
	}
	return fmt.Sprintf("made-up-model-%d", i)
}

// hostilePath is the i-th made-up path: unknown routes, some with escapes that decode to bytes
// that are not UTF-8.
func hostilePath(i int) string {
	if i%5 == 0 {
		return fmt.Sprintf("/v1/%d/%%ff%%fe", i)
	}
	return fmt.Sprintf("/nope/%d/v1/completions", i)
}

// TestLabelCardinalityBounded floods the data port with 10,000 made-up model names (invalid
// UTF-8 and over-long ones among them, with made-up priorities and tenants) and both HTTP ports
// with 10,000 made-up paths, and checks that no metric family grows by more than a few series
// while a real client keeps being served.
func TestLabelCardinalityBounded(t *testing.T) {
	g := startGateway(t, 1)
	metrics := g.MetricsAddr()
	serve := func() int {
		resp, _ := post(t, g.http+"/v1/completions", `{"model":"llama","prompt":"hello"}`)
		return resp.StatusCode
	}
	// Warm up every outcome once, so the series they create exist before the count.
	serve()
	post(t, g.http+"/v1/completions", `{"model":"warm-up","prompt":"x"}`)
	post(t, g.http+"/v1/completions", `{"model":`)
	before := seriesCounts(t, metrics)

	stop := make(chan struct{})
	var served, failed atomic.Int64
	done := make(chan struct{})
	go func() { // a real client, during the flood
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if serve() == http.StatusOK {
				served.Add(1)
			} else {
				failed.Add(1)
			}
		}
	}()
	const n = 10_000
	odd := flood(t, n, 8, func(i int) *http.Request {
		body := fmt.Sprintf(`{"model":"%s","prompt":"x"}`, hostileModel(i))
		r, _ := http.NewRequest(http.MethodPost, g.http+"/v1/completions", strings.NewReader(body))
		r.Header.Set("X-Switchyard-Priority", fmt.Sprint(i))
		r.Header.Set("X-Switchyard-Tenant", fmt.Sprint("tenant-", i))
		return r
	})
	for _, base := range []string{g.http, "http://" + metrics} {
		odd += flood(t, n, 8, func(i int) *http.Request {
			r, _ := http.NewRequest(http.MethodGet, base+hostilePath(i), nil)
			return r
		})
	}
	close(stop)
	<-done
	if odd != 0 {
		t.Errorf("%d hostile requests were not answered 4xx", odd)
	}
	if served.Load() == 0 || failed.Load() != 0 {
		t.Errorf("during the flood: %d requests served, %d failed", served.Load(), failed.Load())
	}
	if s := serve(); s != http.StatusOK {
		t.Errorf("after the flood: %d", s)
	}
	checkBounded(t, before, seriesCounts(t, metrics), 2)
	if body := get(t, "http://"+metrics+"/metrics"); !strings.Contains(body, `switchyard_gateway_requests_total{code="404",model="other"}`) {
		t.Error("unknown models are not counted under model=\"other\"")
	}
}
