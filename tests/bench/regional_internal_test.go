package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

func TestCountSamples(t *testing.T) {
	a := workload.Arrival{Process: workload.OnOff, BurstLength: 2 * time.Second, Period: 8 * time.Second}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	samples := []loadgen.Sample{
		{Region: "east", ServedRegion: "east", Cluster: "e1", Scheduled: sec(0.5)},
		{Region: "east", ServedRegion: "west", Cluster: "w1", Scheduled: sec(1)},
		{Region: "east", Error: loadgen.ErrHTTP429, Scheduled: sec(1.5)},
		{Region: "west", ServedRegion: "east", Cluster: "e1", Scheduled: sec(3)},  // leaves, in the settle window
		{Region: "west", ServedRegion: "west", Cluster: "w1", Scheduled: sec(6)},  // quiet
		{Region: "eu", ServedRegion: "west", Cluster: "w1", Scheduled: sec(13.5)}, // leaves, quiet (13.5 mod 8 = 5.5)
		{Region: "eu", Error: loadgen.ErrTransport, Scheduled: sec(7)},            // quiet, failed: not counted as leaving
		{Region: "eu", ServedRegion: "eu", Cluster: "u1", Scheduled: sec(8.5)},    // in the next burst
	}
	var m ModeFigures
	countSamples(&m, samples, "east", a, 3*time.Second)
	want := ModeFigures{BurstRequests: 3, BurstLeft: 1, SteadyRequests: 5, SteadyLeft: 2, QuietRequests: 3, QuietLeft: 1}
	if m.BurstRequests != want.BurstRequests || m.BurstLeft != want.BurstLeft || m.SteadyRequests != want.SteadyRequests ||
		m.SteadyLeft != want.SteadyLeft || m.QuietRequests != want.QuietRequests || m.QuietLeft != want.QuietLeft {
		t.Fatalf("counts %+v, want %+v", m, want)
	}
	if m.LeftByCluster["w1"] != 1 || len(m.LeftByCluster) != 1 {
		t.Errorf("left by cluster %v, want w1: 1", m.LeftByCluster)
	}
}

func TestRegionBurstCheck(t *testing.T) {
	figures := func(globalP99 report.Num, best, near, other float64, steadyLeft int) Figures {
		return Figures{Regional: &RegionalFigures{BurstRegion: "us-east-1", Modes: []ModeFigures{
			{Mode: "local-only", BurstTTFTMs: Percentiles{P99: 1000}},
			{Mode: "global", BurstTTFTMs: Percentiles{P99: globalP99}, SteadyRequests: 100, SteadyLeft: steadyLeft,
				OverflowAnswered: ChoiceCounts{"best": best, "near_best": near, "other": other}},
		}}}
	}
	tests := []struct {
		name string
		f    Figures
		met  bool
	}{
		{"every figure met", figures(200, 95, 5, 0, 1), true},
		{"tail not cut enough", figures(300, 95, 5, 0, 1), false},
		{"overflow not on the best", figures(200, 80, 20, 0, 1), false},
		{"steady traffic leaves", figures(200, 95, 5, 0, 2), false},
		{"global failed its tail", figures(report.Num(math.Inf(1)), 95, 5, 0, 0), false},
		{"no regional figures", Figures{}, false},
		{"spillover beaten", withSpillover(figures(200, 95, 5, 0, 1), 250), true},
		{"spillover better than global", withSpillover(figures(200, 95, 5, 0, 1), 190), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := regionBurst.Check(tt.f)
			if v.Met != tt.met || v.Detail == "" ||
				(strings.HasPrefix(tt.name, "spillover") && !strings.Contains(v.Detail, "global / spillover")) {
				t.Fatalf("verdict %+v, want met=%v", v, tt.met)
			}
		})
	}
}

// withSpillover adds a spillover run whose burst-region P99 is p99.
func withSpillover(f Figures, p99 report.Num) Figures {
	f.Regional.Modes = append(f.Regional.Modes, ModeFigures{Mode: "spillover", BurstTTFTMs: Percentiles{P99: p99}})
	return f
}

func TestRegionalScenarioShape(t *testing.T) {
	sc, err := Lookup("region-burst")
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Regional() || sc.Pods() != 10 || sc.RTT("us-west-2", "us-east-1") != 70*time.Millisecond ||
		sc.RTT("us-east-1", "us-east-1") != 0 {
		t.Fatalf("scenario %+v: regional %v, pods %d", sc, sc.Regional(), sc.Pods())
	}
	cfg := DefaultConfig()
	cfg.Scenario, cfg.GatewayBin = sc, "gw"
	if err := cfg.Validate(); err == nil {
		t.Fatal("a Tier 2 scenario without a router binary was accepted")
	}
	cfg.RouterBin = "router"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestModeFiguresJSONWithFailures checks that a failed tail (+Inf) survives the JSON report.
func TestModeFiguresJSONWithFailures(t *testing.T) {
	m := ModeFigures{Mode: "local-only", BurstTTFTMs: Percentiles{P50: 10, P95: 20, P99: report.Num(math.Inf(1))}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back ModeFigures
	if err := json.Unmarshal(
		b,
		&back,
	); err != nil || !math.IsInf(float64(back.BurstTTFTMs.P99), 1) ||
		back.BurstTTFTMs.P50 != 10 {
		t.Fatalf("round trip of %s: %+v, %v", b, back, err)
	}
}

// A run without the local-only baseline (--policies=global) reports without ratios instead of
// failing.
func TestRegionalBaseline(t *testing.T) {
	for _, tc := range []struct {
		modes []string
		want  string
	}{
		{[]string{"local-only", "global"}, RegionalBaseline},
		{[]string{"global"}, ""},
		{[]string{"global", "local-only"}, RegionalBaseline},
	} {
		if got := regionalBaseline(tc.modes); got != tc.want {
			t.Errorf("regionalBaseline(%v) = %q, want %q", tc.modes, got, tc.want)
		}
	}
}

// The regional oracle replays the scenario's sequence on its fleet in its regions: the burst
// region's clients overflow, within the scenario's round trips, and their tail is reported in real
// time (the simulated times scaled).
func TestRegionalOracle(t *testing.T) {
	sc, w := shortRegionBurst(t)
	reqs, err := workload.Generate(w, w.Seed)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ts float64) *OracleFigures {
		f, err := regionalOracle(t.Context(), sc, w, reqs, "us-east-1", ts)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f1, f2 := at(1), at(2)
	t.Logf("oracle: %+v", *f1)
	if f1.BurstRequests == 0 || f1.SteadyRequests == 0 || f1.BurstLeft == 0 || f1.BurstLeft == f1.BurstRequests {
		t.Fatalf("oracle figures %+v: want burst requests, some (not all) of them served elsewhere", *f1)
	}
	// 3× the region's capacity during bursts: the tail is more than a prefill, less than seconds.
	if f1.BurstTTFTMs.P50 <= 0 || f1.BurstTTFTMs.P99 < f1.BurstTTFTMs.P50 || f1.BurstTTFTMs.P99 > 3000 {
		t.Fatalf("oracle burst TTFT %+v", f1.BurstTTFTMs)
	}
	if f2.BurstTTFTMs.P99 != 2*f1.BurstTTFTMs.P99 || f2.BurstLeft != f1.BurstLeft {
		t.Fatalf("at time scale 2 the oracle's P99 is %v, want twice %v", f2.BurstTTFTMs.P99, f1.BurstTTFTMs.P99)
	}

	var b strings.Builder
	rf := &RegionalFigures{BurstRegion: "us-east-1", Oracle: f1, Modes: []ModeFigures{
		{Mode: "local-only", BurstTTFTMs: Percentiles{P99: 4 * f1.BurstTTFTMs.P99}},
		{Mode: "global", BurstTTFTMs: Percentiles{P99: 2 * f1.BurstTTFTMs.P99}},
	}}
	regionalMarkdown(&b, sc, &report.Report{Targets: make([]report.Target, 2)}, rf)
	for _, want := range []string{"| oracle (simulated) |", "| 0.250 |", "global / oracle: 2.000"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	v := regionBurst.Check(Figures{Regional: rf})
	if !strings.Contains(v.Detail, "global is 2.00× the oracle") {
		t.Fatalf("verdict detail lacks the oracle: %s", v.Detail)
	}
}

// shortRegionBurst returns the region-burst scenario and its workload in simulated time, cut to
// 16 s (two burst periods) at the fleet's measured capacity.
func shortRegionBurst(t *testing.T) (Scenario, *workload.Workload) {
	t.Helper()
	sc, err := Lookup("region-burst")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.Load(sc.Workload)
	if err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithDuration(16 * time.Second); err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithCapacity(42.5); err != nil { // 10 × l40s, as measured for this shape
		t.Fatal(err)
	}
	return sc, w
}

// TestRegionBurstLoads checks that each region-burst scenario's workload is written for its
// layout: the burst region's clients burst to 3× its capacity, the steady regions run at 37.5% of
// theirs, and a burst offers the fleet 90% of its capacity (125% on the overload layout). Every pod
// is an l40s, so a region's share of the fleet's capacity is its share of the pods.
func TestRegionBurstLoads(t *testing.T) {
	for _, tc := range []struct {
		scenario  string
		fleetPeak float64
	}{
		{"region-burst", 0.90},
		{"region-burst-overload", 1.25},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			sc, err := Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			w, err := workload.Load(sc.Workload)
			if err != nil {
				t.Fatal(err)
			}
			const perPod = 4.25 // any capacity per pod: the fractions do not depend on it
			w, err = w.WithCapacity(perPod * float64(sc.Pods()))
			if err != nil {
				t.Fatal(err)
			}
			peak := 0.0
			for _, r := range w.Regions {
				pods := 0
				for _, reg := range sc.Regions {
					if reg.Name == r.Name {
						for _, c := range reg.Clusters {
							for _, p := range c.Pools {
								pods += p.Count
							}
						}
					}
				}
				if pods == 0 {
					t.Fatalf("workload region %s has no pods in the scenario", r.Name)
				}
				rate, want := r.Arrival.Rate, 0.375
				if r.Arrival.Process == workload.OnOff {
					rate, want = r.Arrival.Rate*r.Arrival.BurstFactor, 3
				}
				if got := rate / (perPod * float64(pods)); math.Abs(got-want) > 1e-9 {
					t.Errorf("%s: peak load %.3f of its region's capacity, want %.3f", r.Name, got, want)
				}
				peak += rate
			}
			if got := peak / (perPod * float64(sc.Pods())); math.Abs(got-tc.fleetPeak) > 1e-9 {
				t.Errorf("a burst offers the fleet %.3f of its capacity, want %.3f", got, tc.fleetPeak)
			}
		})
	}
}
