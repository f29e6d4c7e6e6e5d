package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweepSmallPool runs the harness end to end on a pool of 10 gateways and 2 routers for a
// few seconds: every timed change reaches every router, traffic and memory are counted, and the
// table, JSON and plots are written.
func TestSweepSmallPool(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"--nodes=10", "--routers=2", "--warmup=1s", "--window=2s", "--mark-every=200ms",
		"--per-n-timeout=2m", "--router-bench=false", "--target=1000", "--out=" + dir}
	if code := Main(t.Context(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Stopped != "" {
		t.Fatalf("results %+v, want one measured size", rep.Results)
	}
	r := rep.Results[0]
	if r.Marks < 5 || r.Missed != 0 {
		t.Errorf("%d marks, %d (router, mark) pairs missed: want ≥ 5 and none missed", r.Marks, r.Missed)
	}
	// Generous: a change reaches a 12-node pool in well under the summary TTL.
	if r.AllP99 <= 0 || r.AllP99 > 5000 {
		t.Errorf("every router p99 %v ms, want in (0, 5000]", r.AllP99)
	}
	if r.SentPerNode <= 0 || r.OwnPerGateway <= 0 || r.HeapPerNode <= 0 {
		t.Errorf("sent %v B/s per node, own %v B/s per gateway, heap %v B per node: want > 0",
			r.SentPerNode, r.OwnPerGateway, r.HeapPerNode)
	}
	for _, f := range []string{"scale.md", "scale-bandwidth.png", "scale-convergence.png", "scale-memory.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if !strings.Contains(stdout.String(), "| 10 |") {
		t.Errorf("table lacks the N=10 row:\n%s", stdout.String())
	}
}

// TestSweepStopsAtTheLimit checks that a size that runs out of time is reported as where the
// sweep stopped, and the larger sizes are not started.
func TestSweepStopsAtTheLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes, cfg.Routers, cfg.Warmup, cfg.Window = []int{10, 20}, 1, time.Minute, time.Second
	cfg.PerNTimeout = 2 * time.Second
	var log bytes.Buffer
	rep := Sweep(t.Context(), cfg, &log)
	if len(rep.Results) != 2 || rep.Results[0].Stopped == "" || !strings.Contains(rep.Results[1].Stopped, "N=10") {
		t.Fatalf("results %+v, want N=10 stopped by its limit and N=20 not started", rep.Results)
	}
}

func TestFitCurve(t *testing.T) {
	ns := []float64{100, 300, 1000}
	tests := []struct {
		name string
		kind string
		f    func(n float64) float64
	}{
		{"power", "power", func(n float64) float64 { return 3 * math.Pow(n, 1.5) }},
		{"log", "log", func(n float64) float64 { return 100 + 40*math.Log(n) }},
		{"linear", "linear", func(n float64) float64 { return 5 + 2*n }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ys := make([]float64, len(ns))
			for i, n := range ns {
				ys[i] = tt.f(n)
			}
			fit := fitCurve(tt.kind, ns, ys)
			if got, want := fit.At(3000), tt.f(3000); math.Abs(got-want) > 1e-6*want {
				t.Errorf("%s at 3000 = %v, want %v", fit, got, want)
			}
		})
	}
}

func TestParseBenchmarks(t *testing.T) {
	out := "goos: linux\nBenchmarkFailover/region-2   1   4000791652 ns/op   3.433 failover-ms   0 lost-unstarted\n" +
		"PASS\n"
	b := parseBenchmarks(strings.NewReader(out))
	if got := b.get("BenchmarkFailover/region", "failover-ms"); got != 3.433 {
		t.Fatalf("failover-ms = %v, want 3.433 (parsed %v)", got, b)
	}
}
