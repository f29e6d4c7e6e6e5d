package bench_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/bench"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// BenchmarkRouting runs the scenarios named in SWITCHYARD_BENCH_SCENARIOS (comma-separated, or
// "all") for SWITCHYARD_BENCH_DURATION of arrivals (default 60s) and writes their reports into
// SWITCHYARD_BENCH_OUT (default bench-results). Each scenario runs once whatever b.N is (it lasts
// minutes, so the framework never asks for more); the default profile's TTFT ratios against round
// robin are reported as metrics, and for Tier 2 scenarios the global mode's figures against
// local-only. Trace scenarios read their trace from SWITCHYARD_TRACE_DIR when set, and are
// skipped when the trace is missing.
func BenchmarkRouting(b *testing.B) {
	list := os.Getenv("SWITCHYARD_BENCH_SCENARIOS")
	if list == "" {
		b.Skip("set SWITCHYARD_BENCH_SCENARIOS=all (or a list), or run `go run ./tests/cmd/bench --scenario=NAME`")
	}
	var scs []bench.Scenario
	if list == "all" {
		scs = bench.Scenarios()
	} else {
		for name := range strings.SplitSeq(list, ",") {
			sc, err := bench.Lookup(strings.TrimSpace(name))
			if err != nil {
				b.Fatal(err)
			}
			scs = append(scs, sc)
		}
	}
	bin, router := gatewayBinary(b), routerBinary(b)
	for _, sc := range scs {
		b.Run(sc.Name, func(b *testing.B) { runScenario(b, sc, bin, router) })
	}
}

func runScenario(b *testing.B, sc bench.Scenario, bin, router string) {
	cfg := bench.DefaultConfig()
	cfg.Scenario, cfg.GatewayBin, cfg.RouterBin = sc, bin, router
	if sc.Regional() {
		cfg.Policies = bench.RouterModes
	}
	if d := os.Getenv("SWITCHYARD_BENCH_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Duration = dur
	}
	if out := os.Getenv("SWITCHYARD_BENCH_OUT"); out != "" {
		cfg.Out = out
	}
	cfg.TraceDir = os.Getenv("SWITCHYARD_TRACE_DIR")
	res, err := bench.Run(context.Background(), cfg)
	if errors.Is(err, workload.ErrTraceMissing) {
		b.Skipf("%v (set SWITCHYARD_TRACE_DIR to the traces' directory)", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	if r := res.Regional; r != nil {
		g, lo := r.Mode("global"), r.Mode(bench.RegionalBaseline)
		b.ReportMetric(float64(g.BurstTTFTMs.P99)/float64(lo.BurstTTFTMs.P99), "global/local-only-burst-ttft-p99")
		b.ReportMetric(g.BestShare(), "overflow-on-best")
		b.ReportMetric(g.SteadyLeftShare(), "steady-left-region")
	} else {
		for _, p := range []int{50, 95, 99} {
			b.ReportMetric(res.TTFT("default", p)/res.TTFT(bench.Baseline, p), "default/rr-ttft-p"+strconv.Itoa(p))
		}
	}
	if res.Verdict != nil {
		b.Logf("%s: target %s: met=%v: %s", sc.Name, res.Target, res.Verdict.Met, res.Verdict.Detail)
	}
}
