//go:build unix

package scrape_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
)

const fleetEnv = "SWITCHYARD_SCRAPE_FAKE_FLEET"

// TestFakeFleetProcess is not a test: BenchmarkScrapeFleet runs the test binary with this test
// selected to serve N fake vLLM metrics servers in a separate process, so the benchmark measures
// the scraper's CPU and memory only. It prints one "ADDR host:port" line per server, then "READY",
// and serves until its stdin is closed.
func TestFakeFleetProcess(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(fleetEnv))
	if n <= 0 {
		t.Skip("helper process for BenchmarkScrapeFleet")
	}
	page := []byte(benchPage())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(page) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, vllmModels) })
	out := bufio.NewWriter(os.Stdout)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = http.Serve(ln, mux) }()
		fmt.Fprintln(out, "ADDR", ln.Addr().String())
	}
	fmt.Fprintln(out, "READY")
	_ = out.Flush()
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startFleet runs the fake fleet process and returns its addresses.
func startFleet(b *testing.B, n int) []string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestFakeFleetProcess$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", fleetEnv, n))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var addrs []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "READY" {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return addrs
		}
		if a, ok := strings.CutPrefix(line, "ADDR "); ok {
			addrs = append(addrs, a)
		}
	}
	b.Fatalf("fleet process ended early: %v", sc.Err())
	return nil
}

// BenchmarkScrapeFleet scrapes 1,000 fake vLLM servers (a realistic ~60 KB page each) with the
// default config (interval 200 ms at this size). Each iteration is one second of scraping. It
// reports the scraper process's CPU time per wall second and per scrape, its heap and RSS, scrapes
// per second (5,000 when the machine keeps up) and how many pods have fresh metrics at the end.
// Run: go test -run='^$' -bench=ScrapeFleet -benchtime=5x ./internal/scrape/
func BenchmarkScrapeFleet(b *testing.B) {
	const pods = 1000
	addrs := startFleet(b, pods)
	store := datastore.NewStore(nil, nil)
	specs := make([]datastore.EndpointSpec, len(addrs))
	for i, a := range addrs {
		specs[i] = datastore.EndpointSpec{Address: a}
	}
	store.Sync(specs)
	reg := prometheus.NewRegistry()
	s, err := scrape.New(scrape.DefaultConfig(), store, nil, reg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	time.Sleep(2 * time.Second) // connect to every pod and settle

	scrapes0, cpu0, t0 := scrapeCount(reg), cpuTime(), time.Now()
	b.ResetTimer()
	for range b.N {
		time.Sleep(time.Second)
	}
	b.StopTimer()
	wall, cpu, scrapes := time.Since(t0).Seconds(), (cpuTime() - cpu0).Seconds(), scrapeCount(reg)-scrapes0
	b.ReportMetric(cpu*1000/wall, "cpu-ms/s")
	b.ReportMetric(scrapes/wall, "scrapes/s")
	if scrapes > 0 {
		b.ReportMetric(cpu*1e6/scrapes, "cpu-µs/scrape")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	if rss := rssMB(); rss > 0 {
		b.ReportMetric(rss, "rss-MB")
	}
	fresh := 0
	for _, ep := range store.Endpoints() {
		if !ep.Stale(time.Now(), 2*time.Second) {
			fresh++
		}
	}
	b.ReportMetric(float64(fresh), "fresh-pods")
}

// scrapeCount is the number of successful scrapes so far.
func scrapeCount(reg *prometheus.Registry) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "switchyard_gateway_scrape_duration_seconds" {
			return float64(mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	return 0
}

// cpuTime is this process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssMB reads the resident set size from /proc (0 where unavailable).
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
