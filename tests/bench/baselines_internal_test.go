package bench

import (
	"context"
	"math"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
)

func TestEndpointsFileLabelsWeights(t *testing.T) {
	var got []struct {
		Address string            `yaml:"address"`
		Labels  map[string]string `yaml:"labels"`
	}
	raw := endpointsFile([]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, []string{"h100", "a10g", "l40s"},
		map[string]float64{"h100": 15.75, "a10g": 1.2345678})
	if err := yaml.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v:\n%s", err, raw)
	}
	want := []string{"15.75", "1.23457", ""}
	if len(got) != 3 {
		t.Fatalf("%d entries:\n%s", len(got), raw)
	}
	for i, e := range got {
		if e.Address != []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}[i] || e.Labels[WeightLabel] != want[i] {
			t.Errorf("entry %d: %+v, want weight %q", i, e, want[i])
		}
	}
	if string(endpointsFile(nil, nil, nil)) != "[]\n" {
		t.Error("no pods: want an explicit empty list")
	}
}

// TestPodWeightsMeasuredWhenNeeded checks that the weighted baselines get per-profile weights
// even when the fleet capacity is given (so no capacity was measured), and that nothing is
// measured for them when no weighted baseline runs.
func TestPodWeightsMeasuredWhenNeeded(t *testing.T) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	sc := Scenario{Name: "t", Workload: "mixed-fleet", Pools: []Pool{{"h100", 1}, {"a10g", 1}}}
	for _, tt := range []struct {
		policies []string
		measured bool
	}{{[]string{"round-robin", "default"}, false}, {[]string{"round-robin", "p2c"}, true}} {
		cfg := Config{Scenario: sc, Policies: tt.policies, Physics: physics.DefaultConfig()}
		res := &Result{}
		if err := podWeights(context.Background(), &cfg, w, res); err != nil {
			t.Fatal(err)
		}
		if got := len(cfg.weights) == 2 && cfg.weights["h100"] > 5*cfg.weights["a10g"]; got != tt.measured {
			t.Fatalf("%v: weights %v, want measured %v (h100 well above a10g)", tt.policies, cfg.weights, tt.measured)
		}
	}
	cfg := Config{Scenario: sc, Policies: []string{"leastconn"}}
	res := &Result{PodCapacity: map[string]float64{"h100": 16, "a10g": 1}}
	if err := podWeights(
		context.Background(),
		&cfg,
		w,
		res,
	); err != nil || cfg.weights["h100"] != 16 ||
		res.PodWeights["a10g"] != 1 {
		t.Fatalf("measured capacity not used as the weights: %v, %v", cfg.weights, err)
	}
}

// figures builds a run's figures with the given TTFT P95 (= P99) and goodput per policy.
func figures(ttft map[string]float64, goodput map[string]float64) Figures {
	r := &report.Report{}
	for _, p := range Policies {
		v, ok := ttft[p]
		if !ok {
			continue
		}
		tg := report.Target{Name: p}
		tg.TTFTMs.P50, tg.TTFTMs.P95, tg.TTFTMs.P99 = report.Num(v), report.Num(v), report.Num(v)
		if g, ok := goodput[p]; ok {
			tg.Goodput = &report.Goodput{Fraction: report.Num(g)}
		}
		r.Targets = append(r.Targets, tg)
	}
	return Figures{Report: r}
}

// TestVerdictsAgainstTheBestBaseline checks that the Tier 1 verdicts compare the shipped profile
// with the best baseline that ran (by name), not only with round robin or gie-default.
func TestVerdictsAgainstTheBestBaseline(t *testing.T) {
	lookup := func(name string) Scenario {
		sc, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	tests := []struct {
		scenario   string
		ttft       map[string]float64
		goodput    map[string]float64
		wantMet    bool
		wantDetail string
	}{
		{
			"mixed-fleet",
			map[string]float64{"round-robin": 100000, "gie-default": 600, "p2c": 150, "default": 190},
			nil,
			false,
			"best baseline p2c 150 ms",
		},
		{
			"mixed-fleet",
			map[string]float64{"round-robin": 100000, "gie-default": 600, "leastconn": 300, "default": 190},
			nil,
			true,
			"best baseline leastconn 300 ms",
		},
		{
			"bursty",
			map[string]float64{"round-robin": 20000, "weighted-round-robin": 250, "default": 280},
			nil,
			false,
			"best baseline weighted-round-robin 250 ms",
		},
		{
			"uniform-steady",
			map[string]float64{"round-robin": 500, "p2c": 400, "default": 505},
			nil,
			false,
			"best baseline p2c",
		},
		{
			"uniform-steady",
			map[string]float64{"round-robin": 500, "p2c": 480, "default": 505},
			nil,
			true,
			"best baseline p2c",
		},
		{"trace-conversation", map[string]float64{"round-robin": 1, "gie-lora": 1, "default": 1},
			map[string]float64{"round-robin": 0.5, "gie-lora": 0.9, "default": 0.8}, false, "best baseline gie-lora 90.0%"},
		{
			"mixed-fleet",
			map[string]float64{"round-robin": 100000, "random": math.Inf(1), "default": 190},
			nil,
			true,
			"best baseline round-robin",
		},
	}
	for _, tt := range tests {
		t.Run(tt.scenario+"/"+tt.wantDetail, func(t *testing.T) {
			v := lookup(tt.scenario).Check(figures(tt.ttft, tt.goodput))
			if v.Met != tt.wantMet || !strings.Contains(v.Detail, tt.wantDetail) {
				t.Fatalf("verdict %+v, want met %v with %q", v, tt.wantMet, tt.wantDetail)
			}
		})
	}
}

func TestPoliciesListEveryBaseline(t *testing.T) {
	for _, p := range append([]string{Baseline, Shipped, "gie-default", "gie-lora"}, WeightedPolicies...) {
		if !strings.Contains(","+strings.Join(Policies, ",")+",", ","+p+",") {
			t.Errorf("Policies %v lacks %s", Policies, p)
		}
	}
	if strings.Join(RouterModes, ",") != "local-only,spillover,global" {
		t.Errorf("RouterModes %v", RouterModes)
	}
}
