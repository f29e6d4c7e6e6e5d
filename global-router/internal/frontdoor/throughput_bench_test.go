package frontdoor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
)

// throughputWorkers is how many clients send at once in BenchmarkRouterThroughput.
const throughputWorkers = 64

// directCPU is the CPU per request of BenchmarkRouterThroughput's direct path, which its router
// path subtracts to find the router's own share.
var directCPU atomic.Int64

// BenchmarkRouterThroughput sends small streaming completions as fast as 64 closed-loop clients
// can, directly to the loopback gateway stand-in and through the router's front door and
// forwarder (h2c to the gateway), and reports requests per second, CPU per request and the
// p50/p99 of end-to-end time. Client, router and stand-in share the process and its cores, so
// req/s is what all three manage together; the router's own cost is router-cpu-us (the router
// path's CPU per request less the direct path's, so run both, direct first), and
// router-2core-req/s is what two cores would route at that cost. Run with -benchtime=20000x.
func BenchmarkRouterThroughput(b *testing.B) {
	e := newBenchEnv(b)
	for _, target := range []struct{ name, url string }{{"direct", e.gateway}, {"router", e.router}} {
		b.Run(target.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{
				MaxIdleConnsPerHost: throughputWorkers, DisableCompression: true,
			}}
			defer client.CloseIdleConnections()
			url := target.url + "/v1/completions"
			if err := stream(client, url, benchBody); err != nil { // open a connection first
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu, start := cpuTime(), time.Now()
			times, failed := closedLoop(b.N, client, url)
			elapsed, cpu := time.Since(start), cpuTime()-cpu
			b.StopTimer()
			if failed > 0 {
				b.Fatalf("%d of %d requests failed", failed, b.N)
			}
			perReq := cpu / time.Duration(b.N)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			b.ReportMetric(usec(perReq), "cpu-us/op")
			b.ReportMetric(usec(quantile(times, 0.50)), "e2e-p50-us")
			b.ReportMetric(usec(quantile(times, 0.99)), "e2e-p99-us")
			if target.name == "direct" {
				directCPU.Store(int64(perReq))
			} else if d := time.Duration(directCPU.Load()); d > 0 && perReq > d {
				b.ReportMetric(usec(perReq-d), "router-cpu-us")
				b.ReportMetric(2*float64(time.Second)/float64(perReq-d), "router-2core-req/s")
			}
		})
	}
}

// closedLoop sends n requests from throughputWorkers clients, each sending its next as soon as
// the last is answered, and returns the sorted end-to-end times and how many failed.
func closedLoop(n int, client *http.Client, url string) ([]time.Duration, int) {
	var next, failed atomic.Int64
	var mu sync.Mutex
	times := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	for range throughputWorkers {
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(n) {
				start := time.Now()
				if err := stream(client, url, benchBody); err != nil {
					failed.Add(1)
					continue
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			times = append(times, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(times)
	return times, int(failed.Load())
}

// failoverRate is the open-loop arrival rate of BenchmarkFailover.
const failoverRate = 500

// BenchmarkFailover kills gateways under open-loop load (500 streaming requests a second) at a
// us-east-1 router over six clusters, two per region: "cluster" kills one of the two local
// clusters' gateways, "region" both (a whole region's capacity gone). Gossip still lists the
// dead clusters as fresh (its failure detection takes seconds), so what reroutes is the
// router's passive health: connection failures before the first byte are retried on the next
// candidate and eject the cluster. It reports failover-ms, the time from the kill to the last
// request of the first run of requests that still tried a dead cluster (answered on a retry,
// or failed; the run ends at a quiet gap of 250 ms, after which the requests that try a dead
// cluster are the ejected clusters' health probes, reported as probes), the requests retried, and the requests lost:
// unstarted (no byte of an answer reached the client; the
// target is 0) and started (a stream cut mid-way by the crash). One op is one whole scenario
// (1 s before the kill, 3 s after); run with -benchtime=1x.
func BenchmarkFailover(b *testing.B) {
	for _, tc := range []struct {
		name string
		kill []string
	}{{"cluster", []string{"east-a"}}, {"region", []string{"east-a", "east-b"}}} {
		b.Run(tc.name, func(b *testing.B) {
			var worst failoverResult
			for b.Loop() {
				r := runFailover(b, tc.kill)
				if r.after > worst.after || worst.sent == 0 {
					worst = r
				}
			}
			b.ReportMetric(float64(worst.after)/float64(time.Millisecond), "failover-ms")
			b.ReportMetric(float64(worst.retried), "retried")
			b.ReportMetric(float64(worst.probes), "probes")
			b.ReportMetric(float64(worst.lostUnstarted), "lost-unstarted")
			b.ReportMetric(float64(worst.lostStarted), "lost-started")
			b.ReportMetric(float64(worst.sent), "sent")
		})
	}
}

// failoverResult is one failover scenario's outcome.
type failoverResult struct {
	after                      time.Duration // kill → end of the failover window (failoverWindow)
	probes                     int           // requests that tried a dead cluster after the window
	retried, sent              int
	lostUnstarted, lostStarted int
}

// failoverFleet starts one gateway stand-in per cluster of scaleRegions (two each), each
// answering with its cluster and region as a gateway does, and returns their servers by
// cluster and a router front door over them.
func failoverFleet(b *testing.B) (map[string]*httptest.Server, string) {
	b.Helper()
	names := []string{"east-a", "west-a", "eu-a", "east-b", "west-b", "eu-b"} // c%3 → region
	servers := map[string]*httptest.Server{}
	for i, name := range names {
		region := scaleRegions[i%len(scaleRegions)]
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(contract.HeaderCluster, name)
			w.Header().Set(contract.HeaderRegion, region)
			streamingGateway(w, r)
		}))
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
		srv.Start()
		b.Cleanup(srv.Close)
		servers[name] = srv
	}
	src := scaleSource(b, len(names), 1, func(i int) string { return servers[names[i]].URL })
	for i := range src.Summaries {
		s := &src.Summaries[i]
		s.Node, s.Cluster, s.Summary.Cluster = names[i]+"-gw", names[i], names[i]
	}
	table := scaleTable(src)
	fwd, err := forward.New(forward.DefaultConfig(), table)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(fwd.Close)
	front := httptest.NewServer(benchFrontDoor(table, fwd).Handler())
	b.Cleanup(front.Close)
	return servers, front.URL
}

// runFailover runs one scenario: open-loop load, the kill after a second, three seconds more.
func runFailover(b *testing.B, kill []string) failoverResult {
	servers, router := failoverFleet(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
	defer client.CloseIdleConnections()
	dead := map[string]bool{}
	for _, k := range kill {
		dead[k] = true
	}
	var (
		mu       sync.Mutex
		res      failoverResult
		killAt   time.Time
		wg       sync.WaitGroup
		affected []time.Duration // kill → arrival of each request that tried a dead cluster
	)
	start := time.Now()
	const before, after = time.Second, 3 * time.Second
	interval := time.Second / failoverRate
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= before+after {
			break
		}
		time.Sleep(time.Until(due))
		if killAt.IsZero() && due.Sub(start) >= before {
			killAt = time.Now()
			for _, k := range kill {
				servers[k].Listener.Close()
				servers[k].CloseClientConnections()
			}
		}
		wg.Go(func() {
			sentAt := time.Now()
			o := failoverRequest(client, router+"/v1/completions")
			mu.Lock()
			defer mu.Unlock()
			res.sent++
			if o.route == string(contract.RouteRetry) {
				res.retried++
			}
			switch {
			case !o.ok && !o.started:
				res.lostUnstarted++
			case !o.ok:
				res.lostStarted++
			}
			if !killAt.IsZero() && (o.route == string(contract.RouteRetry) || !o.ok || dead[o.cluster]) {
				affected = append(affected, sentAt.Sub(killAt))
			}
		})
	}
	wg.Wait()
	res.after, res.probes = failoverWindow(affected)
	return res
}

// failoverGap is the quiet time that ends the failover window: once no request has tried a
// dead cluster for this long, the ones that still do are the passive-health probes of the
// ejected clusters (one request per backoff period), not traffic being rerouted.
const failoverGap = 250 * time.Millisecond

// failoverWindow returns the arrival of the last request of the first run of affected arrivals
// (no gap longer than failoverGap) and how many affected arrivals came after it.
func failoverWindow(affected []time.Duration) (time.Duration, int) {
	slices.Sort(affected)
	var end time.Duration
	for i, d := range affected {
		if d-end > failoverGap {
			return end, len(affected) - i
		}
		end = d
	}
	return end, 0
}

// failoverOutcome is what the client saw of one request.
type failoverOutcome struct {
	ok, started    bool
	route, cluster string
}

func failoverRequest(client *http.Client, url string) failoverOutcome {
	resp, err := client.Post(url, "application/json", strings.NewReader(benchBody))
	if err != nil {
		return failoverOutcome{}
	}
	defer resp.Body.Close()
	o := failoverOutcome{route: resp.Header.Get(contract.HeaderRoute), cluster: resp.Header.Get(contract.HeaderCluster)}
	var buf [1]byte
	n, _ := io.ReadFull(resp.Body, buf[:])
	o.started = n > 0 && resp.StatusCode == http.StatusOK
	rest, err := io.ReadAll(resp.Body)
	o.ok = err == nil && resp.StatusCode == http.StatusOK && strings.HasSuffix(string(rest), "data: [DONE]\n\n")
	if !o.ok && resp.StatusCode != http.StatusOK {
		o.started = false
	}
	return o
}
