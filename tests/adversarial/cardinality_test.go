package adversarial

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestLabelCardinalityBounded floods a gateway and a router with 10,000 made-up model names
// (invalid UTF-8 and over-long ones among them) on their OpenAI ports, and every HTTP port
// (gateway data and metrics ports, router data, metrics and admin ports) with 10,000 made-up
// paths, and checks that no metric family of either process grows by more than a few series,
// that every hostile request is answered 4xx, and that a real client is served through the
// router during and after the flood.
func TestLabelCardinalityBounded(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-card", "us-east-1", []string{w.Pod("h100").Listen})
	rt := w.Router("us-east-1", "")
	ctx := context.Background()
	if err := harness.WaitClusters(ctx, "http://"+rt.Admin, w.Token(), 1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	real := newClient(2)
	serve := func() int {
		body := `{"model":"` + harness.TestModel + `","prompt":"hello","max_tokens":2}`
		resp, err := real.Post("http://"+rt.Listen+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := serve(); s != http.StatusOK {
		t.Fatalf("a completion through the router before the flood: %d", s)
	}
	// Every outcome once, so the series it creates exist before the count.
	warm := newClient(1)
	for _, target := range []string{gw.Listen, rt.Listen} {
		sendAll(warm, 1, 1, func(int) *http.Request { return completion(target, "warm-up") })
		sendAll(warm, 1, 1, func(int) *http.Request { return get(target, "/warm-up") })
	}
	sendAll(warm, 1, 1, func(int) *http.Request { return adminCall(rt.Admin, "/WarmUp") })
	procs := map[string]string{"gateway": gw.Metrics, "router": rt.Metrics}
	before := map[string]map[string]int{}
	for name, addr := range procs {
		// The gossip gauges appear at the node's first sweep.
		poll.Until(t, 30*time.Second, func() bool {
			before[name] = scrapeSeries(t, addr)
			// The gateway's autoscaling series appear at its first step after the pool is known.
			return before[name]["switchyard_gossip_members"] != 0 &&
				(name != "gateway" || before[name]["switchyard_gateway_desired_replicas"] != 0)
		}, "the "+name+"'s gossip gauges")
	}

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
	const n, conns = 10_000, 8
	hostile := newClient(conns)
	var odd int64
	for _, target := range []string{gw.Listen, rt.Listen} {
		odd += sendAll(hostile, n, conns, func(i int) *http.Request { return completion(target, madeUpModel(i)) })
	}
	for _, target := range []string{gw.Listen, gw.Metrics, rt.Listen, rt.Metrics, rt.Admin} {
		odd += sendAll(hostile, n, conns, func(i int) *http.Request { return get(target, madeUpPath(i)) })
	}
	odd += sendAll(hostile, n, conns, func(i int) *http.Request { return adminCall(rt.Admin, madeUpPath(i)) })
	close(stop)
	<-done

	if odd != 0 {
		t.Errorf("%d hostile requests were not answered 4xx", odd)
	}
	if served.Load() == 0 || failed.Load() != 0 {
		t.Errorf("during the flood: %d completions served through the router, %d failed", served.Load(), failed.Load())
	}
	if s := serve(); s != http.StatusOK {
		t.Errorf("a completion through the router after the flood: %d", s)
	}
	for name, addr := range procs {
		after := scrapeSeries(t, addr)
		for family, c := range after {
			if c > before[name][family]+2 {
				t.Errorf("%s: %s grew from %d to %d series", name, family, before[name][family], c)
			}
		}
	}
	for _, m := range []struct{ addr, family, label string }{
		{gw.Metrics, "switchyard_gateway_requests_total", "model=other"},
		{rt.Metrics, "switchyard_router_requests_total", "model=other"},
		{rt.Metrics, "switchyard_router_admin_calls_total", "method=other"},
	} {
		if v := harness.MetricValue(t, m.addr, m.family, m.label); v < n {
			t.Errorf("%s{%s} = %v, want the %d hostile requests counted there", m.family, m.label, v, n)
		}
	}
}

// madeUpModel is the i-th made-up model name: a plain one, or every fifth with bytes that are
// not UTF-8, or every seventh longer than any label value should be.
func madeUpModel(i int) string {
	switch {
	case i%5 == 0:
		return fmt.Sprintf("bad-\xff\xfe-%d", i)
	case i%7 == 0:
		return strings.Repeat("m", 300) + fmt.Sprint(i)
	}
	return fmt.Sprintf("made-up-model-%d", i)
}

// madeUpPath is the i-th made-up path: unknown routes, some with escapes that decode to bytes
// that are not UTF-8.
func madeUpPath(i int) string {
	if i%5 == 0 {
		return fmt.Sprintf("/%d/%%ff%%fe", i)
	}
	return fmt.Sprintf("/nope-%d/v1/completions", i)
}

func completion(addr, model string) *http.Request {
	body := fmt.Sprintf(`{"model":"%s","prompt":"x","max_tokens":1}`, model)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

func get(addr, path string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	return req
}

// adminCall is a Connect call without a token to a made-up AdminService method.
func adminCall(addr, path string) *http.Request {
	req, _ := http.NewRequest(
		http.MethodPost,
		"http://"+addr+"/switchyard.admin.v1.AdminService"+path,
		strings.NewReader("{}"),
	)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// newClient returns a client that keeps up to conns connections per host alive.
func newClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns},
		Timeout:   20 * time.Second,
	}
}

// sendAll sends the n requests made by req from workers goroutines through client, and returns
// how many got no answer or one other than a 4xx.
func sendAll(client *http.Client, n, workers int, req func(i int) *http.Request) int64 {
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

// scrapeSeries counts the samples of each metric family on addr/metrics (a histogram's buckets,
// sum and count under its own name).
func scrapeSeries(t *testing.T, addr string) map[string]int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
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
