package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// TestSeedsDisjoint: no report seed is a tuning seed, every scenario's embedded seed (what the
// default profile was tuned on) is a tuning seed, and the sensitivity table takes tuning seeds.
func TestSeedsDisjoint(t *testing.T) {
	tuning := map[uint64]bool{}
	for _, s := range TuningSeeds(MaxSeeds) {
		if !IsTuningSeed(s) || IsReportSeed(s) {
			t.Fatalf("tuning seed %d", s)
		}
		tuning[s] = true
	}
	for _, s := range ReportSeeds(MaxSeeds) {
		if tuning[s] || IsTuningSeed(s) || !IsReportSeed(s) {
			t.Fatalf("report seed %d is also a tuning seed", s)
		}
	}
	for _, sc := range Scenarios() {
		w, err := workload.Load(sc.Workload)
		if err != nil {
			t.Fatal(err)
		}
		if !w.IsTrace() && !IsTuningSeed(w.Seed) {
			t.Errorf("%s: embedded seed %d is not in the tuning set", sc.Name, w.Seed)
		}
	}
	if cells := planTestCells(t, true); len(cells) == 0 {
		t.Fatal("no cells")
	} else {
		for _, c := range cells {
			if c.Config.Kind == "sweep" && !IsReportSeed(c.Config.Seed) ||
				c.Config.Kind == "sensitivity" && !IsTuningSeed(c.Config.Seed) {
				t.Errorf("%s: seed %d", c.Label, c.Config.Seed)
			}
		}
	}
}

func planTestCells(t *testing.T, sensitivity bool) []*Cell {
	cfg := testSweepConfig(t, nil)
	cfg.Sensitivity.Enabled = sensitivity
	cfg.defaults()
	cells, err := planCells(context.Background(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

// testSweepConfig is a two-scenario, two-load, three-seed sweep whose cells run fakeCell.
func testSweepConfig(t *testing.T, runs *atomic.Int32) SweepConfig {
	cfg := DefaultSweepConfig()
	cfg.Out = t.TempDir()
	cfg.Scenarios = cfg.Scenarios[:2]
	cfg.Loads, cfg.Seeds = []float64{0.3, 0.9}, 3
	cfg.Bench.Policies = []string{"round-robin", "default"}
	cfg.Sensitivity.Enabled = false
	cfg.capacity = func(context.Context, Scenario) (float64, error) { return 10, nil }
	cfg.runCell = func(_ context.Context, c *Cell) (*CellResult, error) {
		if runs != nil {
			runs.Add(1)
		}
		return fakeCell(c), nil
	}
	return cfg
}

// fakeCell makes up figures: round robin's P95 grows with the load, the default's is a tenth of
// it, the oracle's half the default's; the seed moves them by a few percent.
func fakeCell(c *Cell) *CellResult {
	jitter := 1 + 0.01*float64(c.Config.Seed%5)
	rr := 1000 * c.Config.Load * jitter
	fig := func(p string, p95 float64) PolicyFigures {
		return PolicyFigures{
			Policy:           p,
			Requests:         100,
			TTFTMs:           Percentiles{report.Num(p95 / 2), report.Num(p95), report.Num(p95 * 1.2)},
			MeanITLMs:        20,
			OutputTokensPerS: 1000,
			Goodput:          0.9,
		}
	}
	return &CellResult{RateRPS: c.Config.Load * 10, LoadAvg: [2]string{"0.5", "1.0"},
		Policies: []PolicyFigures{fig("round-robin", rr), fig("default", rr/10)}, Oracle: ptr(fig(OraclePolicy, rr/20))}
}

func ptr[T any](v T) *T { return &v }

// TestSweepResume: a rerun skips every cell whose results file matches; a configuration change
// (here the SLO) runs every cell again; a torn file and a missing one run their cell again.
func TestSweepResume(t *testing.T) {
	var runs atomic.Int32
	cfg := testSweepConfig(t, &runs)
	var progress bytes.Buffer
	cfg.Progress = &progress
	ctx := context.Background()
	res, err := RunSweep(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const cells = 2 * 2 * 3
	if res.Ran != cells || runs.Load() != cells || len(res.Cells) != cells {
		t.Fatalf("first sweep: ran %d (runner %d) of %d", res.Ran, runs.Load(), cells)
	}
	if !strings.Contains(progress.String(), "12/12 cells") || !strings.Contains(progress.String(), "ETA") {
		t.Errorf("progress:\n%s", progress.String())
	}

	runs.Store(0)
	if res, err = RunSweep(ctx, cfg); err != nil || res.Resumed != cells || runs.Load() != 0 {
		t.Fatalf("resumed sweep: resumed %d, ran %d, err %v", res.Resumed, runs.Load(), err)
	}

	cfg.Resume = false
	if res, err = RunSweep(ctx, cfg); err != nil || res.Ran != cells {
		t.Fatalf("--resume=false: ran %d, err %v", res.Ran, err)
	}
	cfg.Resume = true

	// A torn file and a removed one.
	files, err := filepath.Glob(filepath.Join(cfg.Out, "cells", "sweep-*", "load-*", "seed-*.json"))
	if err != nil || len(files) != cells {
		t.Fatalf("%d cell files (%v)", len(files), err)
	}
	if err := os.WriteFile(files[0], []byte(`{"config": {"schema"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	runs.Store(0)
	if res, err = RunSweep(ctx, cfg); err != nil || res.Ran != 2 || res.Resumed != cells-2 {
		t.Fatalf("after a torn and a missing file: ran %d resumed %d, err %v", res.Ran, res.Resumed, err)
	}

	cfg.SLO.TTFT = time.Second
	runs.Store(0)
	if res, err = RunSweep(ctx, cfg); err != nil || res.Ran != cells || res.Resumed != 0 {
		t.Fatalf("after an SLO change: ran %d resumed %d, err %v", res.Ran, res.Resumed, err)
	}
}

// TestSweepOutputs: the sweep writes a table, a summary and a plot per scenario, with the
// oracle's column and the default profile's standing per load.
func TestSweepOutputs(t *testing.T) {
	cfg := testSweepConfig(t, nil)
	res, err := RunSweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range cfg.Scenarios {
		md, err := os.ReadFile(filepath.Join(cfg.Out, sc.Name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"| 0.30 |", "| 0.90 |", "*oracle (simulated)*", "default P95 TTFT", "beats round-robin", " ± "} {
			if !strings.Contains(string(md), want) {
				t.Errorf("%s.md lacks %q:\n%s", sc.Name, want, md)
			}
		}
		png, err := os.ReadFile(filepath.Join(cfg.Out, sc.Name+"-p95.png"))
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("%s plot: %v", sc.Name, err)
		}
	}
	if len(res.Files) != 3*len(cfg.Scenarios)+1 {
		t.Errorf("files %v", res.Files)
	}
}

// TestAggregate: the figures of one (scenario, load, policy) are the CI over its seeds.
func TestAggregate(t *testing.T) {
	cfg := testSweepConfig(t, nil)
	res, err := RunSweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups := groupSweep(res.Cells)
	if len(groups) != 2 {
		t.Fatalf("%d scenarios", len(groups))
	}
	a := groups[0].aggregateOne(0.9, "round-robin")
	// Seeds ReportSeedBase+0..2 → jitter 1 + 0.01 × (seed mod 5).
	var want []float64
	for _, s := range ReportSeeds(3) {
		want = append(want, 900*(1+0.01*float64(s%5)))
	}
	if e := MeanCI(want); len(a.Seeds) != 3 || !near(a.TTFTP95.Mean, e.Mean) || !near(a.TTFTP95.HalfWidth, e.HalfWidth) {
		t.Errorf("aggregate %+v, want P95 %+v", a.TTFTP95, e)
	}
	if low := belowOracle(groups[0].aggregate()); len(low) != 0 {
		t.Errorf("below the oracle: %v", low)
	}
}

// TestOracleBelowPolicies replays a short mixed-fleet sequence on two report seeds in the
// simulator: the oracle's TTFT percentiles are at or below those of round robin and random
// placed on the same fleet, the baselines the simulator can replay without a gateway.
func TestOracleBelowPolicies(t *testing.T) {
	sc, err := Lookup("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range ReportSeeds(2) {
		cfg := DefaultConfig()
		cfg.Scenario, cfg.Capacity, cfg.Load, cfg.Seed, cfg.Duration = sc, 67.94, 0.7, seed, 3*time.Second
		cfg.SLO = &workload.SLO{TTFT: 2 * time.Second, TPOT: 100 * time.Millisecond}
		w, err := prepareWorkload(context.Background(), &cfg, &Result{})
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := workload.Generate(w, w.Seed)
		if err != nil {
			t.Fatal(err)
		}
		orc, err := oracleFigures(context.Background(), sc, w, reqs, 1)
		if err != nil {
			t.Fatal(err)
		}
		pods := sc.Pods()
		for name, assign := range map[string]func(int) int{
			"round-robin": func(i int) int { return i % pods },
			"random":      func(i int) int { return int((uint64(i)*0x9e3779b97f4a7c15 + seed) >> 33 % uint64(pods)) },
		} {
			ocfg := oracle.DefaultConfig()
			ocfg.Profiles, ocfg.Assign = scenarioProfiles(sc), assign
			rep, err := oracle.Replay(context.Background(), ocfg, w, reqs)
			if err != nil {
				t.Fatal(err)
			}
			base := oracleReportFigures(rep, w.SLO, 1)
			for i, p := range []report.Num{orc.TTFTMs.P50, orc.TTFTMs.P95, orc.TTFTMs.P99} {
				b := []report.Num{base.TTFTMs.P50, base.TTFTMs.P95, base.TTFTMs.P99}[i]
				if p > b {
					t.Errorf("seed %d: oracle %v above %s %v (percentile %d of 3)", seed, p, name, b, i+1)
				}
			}
			if orc.Goodput < base.Goodput || math.IsNaN(float64(orc.Goodput)) {
				t.Errorf("seed %d: oracle goodput %v below %s %v", seed, orc.Goodput, name, base.Goodput)
			}
		}
	}
}

func scenarioProfiles(sc Scenario) []string {
	var out []string
	for _, p := range sc.Pools {
		for range p.Count {
			out = append(out, p.Profile)
		}
	}
	return out
}

// TestOfferedLoad: a Poisson workload's load is its mean; an on/off one's is its burst's, so
// bursty's embedded load 0.225 with 4× bursts offers 0.9.
func TestOfferedLoad(t *testing.T) {
	for _, tt := range []struct {
		name       string
		load, mean float64
	}{{"mixed-fleet", 0.5, 0.5}, {"bursty", 0.9, 0.225}, {"bursty", 0.5, 0.125}} {
		w, err := workload.Load(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := withOfferedLoad(w, tt.load)
		if err != nil {
			t.Fatal(err)
		}
		if !near(got.Load, tt.mean) || !near(OfferedLoad(got), tt.load) {
			t.Errorf("%s at %v: load %v (offered %v), want %v", tt.name, tt.load, got.Load, OfferedLoad(got), tt.mean)
		}
	}
	if w, _ := workload.Load("bursty"); !near(OfferedLoad(w), 0.9) {
		t.Errorf("bursty offers %v", OfferedLoad(w))
	}
	if _, err := withOfferedLoad(
		&workload.Workload{Name: "x", Arrival: &workload.Arrival{Process: workload.Poisson, Rate: 1}},
		3,
	); err == nil {
		t.Error("load 3 accepted")
	}
}

// TestProgressETA: the ETA is the mean measured cell's time × the cells left; resumed cells do
// not count.
func TestProgressETA(t *testing.T) {
	now := time.Unix(0, 0)
	var b bytes.Buffer
	p := newProgress(&b, 4, func() time.Time { return now })
	p.resumed("a")
	if !strings.Contains(b.String(), "ETA ?") {
		t.Errorf("before a measured cell: %s", b.String())
	}
	now = now.Add(30 * time.Second)
	p.ran(30 * time.Second)
	if got := p.line(); !strings.Contains(got, "2/4 cells (1 resumed)") || !strings.Contains(got, "ETA 1m0s") ||
		!strings.Contains(got, "elapsed 30s") {
		t.Errorf("line %q", got)
	}
}
