package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/bench"
	"github.com/switchyard-dev/switchyard/tests/harness"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// TestSmoke runs the whole harness end to end on a tiny scenario: 2 pods, 2 policies, 3 s.
func TestSmoke(t *testing.T) {
	harness.EndToEnd(t)
	bin := gatewayBinary(t)
	out := t.TempDir()
	cfg := bench.DefaultConfig()
	cfg.Scenario = bench.Scenario{
		Name:     "smoke",
		Workload: "uniform-steady",
		Pools:    []bench.Pool{{Profile: "h100", Count: 2}},
	}
	cfg.Policies = []string{"round-robin", "default"}
	cfg.Duration, cfg.Capacity = 3*time.Second, 10 // 6 req/s
	cfg.GatewayBin, cfg.Out = bin, out
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(filepath.Join(out, "smoke.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := report.ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != len(cfg.Policies) {
		t.Fatalf("report has %d targets, want %d", len(rep.Targets), len(cfg.Policies))
	}
	for i, tg := range rep.Targets {
		if tg.Name != cfg.Policies[i] {
			t.Errorf("target %d is %q, want %q", i, tg.Name, cfg.Policies[i])
		}
		// A router with no room answers 429 after its bounded wait (the local-only baseline does
		// in a burst, either mode may on a starved machine); any other failure is a bug.
		if shed := tg.ErrorsByKind["http_429"]; tg.Requests == 0 || tg.OK+shed != tg.Requests || 2*tg.OK < tg.Requests {
			t.Errorf("%s: %d of %d requests ok (%v)", tg.Name, tg.OK, tg.Requests, tg.ErrorsByKind)
		}
		if len(tg.EndpointShare) == 0 {
			t.Errorf("%s: no endpoint share", tg.Name)
		}
	}
	// Round robin over two pods splits the requests evenly, and the pods saw them.
	for _, pod := range res.Policies[0].Pods {
		if pod.Share < 0.3 || pod.Finished == 0 {
			t.Errorf("round-robin pod %s: share %.2f, finished %d", pod.Pod, pod.Share, pod.Finished)
		}
	}
	// The gateway's scheduling outcomes are read (docs/scheduling.md names the metric).
	if d := res.Policies[1].Decisions; d["ok"] == 0 {
		t.Errorf("default: gateway decisions %v, want ok > 0", d)
	}
	md, err := os.ReadFile(filepath.Join(out, "smoke.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", md)
	for _, want := range append([]string{"| policy |", "h100-1"}, cfg.Policies...) {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	for _, name := range []string{"smoke-ttft.png", "smoke-pods.json"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	var pods struct {
		Policies []bench.PolicyStats `json:"policies"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "smoke-pods.json"))
	if err := json.Unmarshal(b, &pods); err != nil || len(pods.Policies) != 2 {
		t.Errorf("pods json: %v, %d policies", err, len(pods.Policies))
	}
}

// TestScenarios checks the scenario table: every scenario resolves and names its target.
func TestScenarios(t *testing.T) {
	want := map[string]int{
		"mixed-fleet":           8,
		"bursty":                8,
		"shared-prefix":         8,
		"precise-prefix":        4,
		"replicas":              4,
		"multi-lora":            8,
		"uniform-steady":        8,
		"pd-long-prompt":        4,
		"region-burst":          10,
		"region-burst-overload": 6,
		"trace-conversation":    8,
		"trace-azure-conv":      8,
	}
	for name, pods := range want {
		t.Run(name, func(t *testing.T) {
			sc, err := bench.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Pods() != pods || sc.Check == nil || sc.Target == "" {
				t.Errorf("%s: %d pods, check %v, target %q", name, sc.Pods(), sc.Check != nil, sc.Target)
			}
		})
	}
	if _, err := bench.Lookup("nope"); err == nil {
		t.Error("unknown scenario accepted")
	}
}

// TestTraceSmoke runs each trace scenario end to end on the synthetic traces: 2 h100 pods,
// round-robin and default, the whole trace (8 requests over about 2 s).
func TestTraceSmoke(t *testing.T) {
	harness.EndToEnd(t)
	bin := gatewayBinary(t)
	for _, tc := range []struct {
		scenario, file, attribution string
	}{
		{"trace-conversation", "mooncake.jsonl", "Mooncake"},
		{"trace-azure-conv", "azure.csv", "Splitwise"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			sc, err := bench.Lookup(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			sc.Pools = []bench.Pool{{Profile: "h100", Count: 2}}
			dir, err := filepath.Abs(filepath.Join("..", "loadgen", "trace", "testdata"))
			if err != nil {
				t.Fatal(err)
			}
			w, err := workload.Load(sc.Workload)
			if err != nil {
				t.Fatal(err)
			}
			// The synthetic trace lasts 2.3 s: replay it whole, from its start.
			file := filepath.Join(t.TempDir(), "w.yaml")
			src := fmt.Sprintf(
				"name: %s\nseed: 3\nduration: 3s\nendpoint: completions\nignore_eos: true\nslo: {ttft: 1s, tpot: 100ms}\n"+
					"trace: {format: %s, path: %s}\n",
				sc.Name,
				w.Trace.Format,
				filepath.Join(dir, tc.file),
			)
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			sc.Workload = file
			cfg := bench.DefaultConfig()
			cfg.Scenario, cfg.Policies = sc, []string{"round-robin", "default"}
			cfg.Capacity, cfg.GatewayBin, cfg.Out = 10, bin, t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := bench.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Trace == nil || res.Trace.Requests != 8 || res.Trace.TimeScale != 1 || res.RateRPS != 8.0/3 {
				t.Fatalf("trace figures %+v, rate %v", res.Trace, res.RateRPS)
			}
			for i, tg := range res.Report.Targets {
				if tg.Requests != 8 || tg.OK != 8 || tg.Goodput == nil {
					t.Errorf("%s: %d of %d requests ok, goodput %v (%v)", tg.Name, tg.OK, tg.Requests, tg.Goodput, tg.ErrorsByKind)
				}
				// Mooncake's hash ids share prefixes: round robin over two pods still finds some.
				if tc.file == "mooncake.jsonl" && !(tg.PrefixCacheHitRate > 0) {
					t.Errorf("%s: prefix-cache hit rate %v, want > 0", tg.Name, tg.PrefixCacheHitRate)
				}
				if tc.file == "azure.csv" && tg.CachedTokens != 0 {
					t.Errorf("%s: %d cached tokens from prompts that share no prefix", tg.Name, tg.CachedTokens)
				}
				// modelsim honours max_tokens: every request generated its recorded output length.
				for _, s := range res.Samples.Targets[i].Samples {
					if s.OutputTokens != s.MaxTokens {
						t.Errorf("%s request %d: %d output tokens, max_tokens %d", tg.Name, s.Index, s.OutputTokens, s.MaxTokens)
					}
				}
			}
			md, err := os.ReadFile(filepath.Join(cfg.Out, sc.Name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"time-scale factor 1×", "goodput req/s", tc.attribution, "| default |"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("markdown lacks %q:\n%s", want, md)
				}
			}
		})
	}
}

// TestRegionalSmoke runs a Tier 2 scenario end to end on a tiny stack: three regions of one h100
// pod each, both router modes, 4 s of region-burst arrivals.
func TestRegionalSmoke(t *testing.T) {
	harness.EndToEnd(t)
	if testing.Short() {
		t.Skip("starts 6 gateways and 6 routers")
	}
	gw, rt := gatewayBinary(t), routerBinary(t)
	sc, err := bench.Lookup("region-burst")
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc.Regions {
		sc.Regions[i].Clusters = []bench.Cluster{
			{Name: sc.Regions[i].Clusters[0].Name, Pools: []bench.Pool{{Profile: "h100", Count: 1}}},
		}
	}
	cfg := bench.DefaultConfig()
	cfg.Scenario, cfg.Policies = sc, bench.RouterModes
	cfg.Duration, cfg.Capacity = 4*time.Second, 8 // 4 req/s mean, bursts at 8 req/s
	cfg.GatewayBin, cfg.RouterBin, cfg.Out = gw, rt, t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Regional == nil || len(res.Regional.Modes) != len(bench.RouterModes) ||
		res.Regional.BurstRegion != "us-east-1" ||
		res.Verdict == nil {
		t.Fatalf("regional figures %+v, verdict %v", res.Regional, res.Verdict)
	}
	for i, tg := range res.Report.Targets {
		// A router with no room answers 429 after its bounded wait (the local-only baseline does
		// in a burst, either mode may on a starved machine); any other failure is a bug.
		if shed := tg.ErrorsByKind["http_429"]; tg.Requests == 0 || tg.OK+shed != tg.Requests || 2*tg.OK < tg.Requests {
			t.Errorf("%s: %d of %d requests ok (%v)", tg.Name, tg.OK, tg.Requests, tg.ErrorsByKind)
		}
		if m := res.Regional.Modes[i]; m.BurstRequests+m.SteadyRequests != tg.Requests {
			t.Errorf("%s: %d burst + %d steady requests, report has %d", m.Mode, m.BurstRequests, m.SteadyRequests, tg.Requests)
		}
		// Every answered burst request names a pod of the stack, so every one is judged.
		if m := res.Regional.Modes[i]; m.Quickest.Compared == 0 || m.Quickest.Compared > m.BurstRequests ||
			m.Quickest.OnQuickest > m.Quickest.Compared {
			t.Errorf("%s: placements judged %+v for %d burst requests", m.Mode, m.Quickest, m.BurstRequests)
		}
	}
	if lo := res.Regional.Mode(
		bench.RegionalBaseline,
	); lo.BurstLeft != 0 || lo.SteadyLeft != 0 ||
		lo.OverflowAnswered.Total() != 0 {
		t.Errorf(
			"local-only: %d burst and %d steady requests left their region, %d overflow counted",
			lo.BurstLeft,
			lo.SteadyLeft,
			lo.OverflowAnswered.Total(),
		)
	}
}

// TestMeasureCapacity checks the capacity search on the a10g profile (fast: a10g runs few steps):
// the rate it returns is sustained and 20% more is not.
func TestMeasureCapacity(t *testing.T) {
	w, err := workload.Load("mixed-fleet")
	if err != nil {
		t.Fatal(err)
	}
	cc := bench.DefaultCapacityConfig()
	c, probes, err := bench.MeasureCapacity(context.Background(), w, "a10g", cc)
	if err != nil {
		t.Fatal(err)
	}
	if c < 0.5 || c > 3 {
		t.Fatalf("a10g capacity %.2f req/s, want 0.5..3 (prefill 3,000 tok/s, ~1,000-token prompts)", c)
	}
	var above bool
	for _, p := range probes {
		if p.Rate > 1.2*c && p.Sustained {
			t.Errorf("rate %.2f above capacity %.2f sustained", p.Rate, c)
		}
		above = above || (p.Rate > c && !p.Sustained)
	}
	if !above {
		t.Error("no probe above the capacity failed")
	}
}

// TestSlowPodAvoided runs modelsim pods behind the real gateway: one h100 and one a10g (about 16
// times less capacity) at a load round robin overloads the a10g with. Round robin sends it half
// the requests and its queue builds; the default profile keeps requests off it, and their time
// to first token shows it.
func TestSlowPodAvoided(t *testing.T) {
	harness.EndToEnd(t)
	if testing.Short() {
		t.Skip("starts gateway processes and a fleet for ~30 s")
	}
	bin := gatewayBinary(t)
	cfg := bench.DefaultConfig()
	cfg.Scenario = bench.Scenario{Name: "slow-pod", Workload: "mixed-fleet",
		Pools: []bench.Pool{{Profile: "h100", Count: 1}, {Profile: "a10g", Count: 1}}}
	cfg.Policies = []string{"round-robin", "default"}
	// mixed-fleet sends 70% of the capacity given: 3.5 req/s, of which round robin gives the
	// a10g 1.75 against the ~1 it sustains.
	cfg.Duration, cfg.Capacity = 5*time.Second, 5
	cfg.GatewayBin, cfg.Out = bin, t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	slowShare := func(p bench.PolicyStats) float64 {
		for _, pod := range p.Pods {
			if strings.HasPrefix(pod.Pod, "a10g") {
				return pod.Share
			}
		}
		t.Fatalf("%s: no a10g pod in %+v", p.Policy, p.Pods)
		return 0
	}
	rr, def := res.Policies[0], res.Policies[1]
	if s := slowShare(rr); s < 0.35 {
		t.Errorf("round robin sent %.0f%% to the a10g, want about half", 100*s)
	}
	if s := slowShare(def); s > 0.15 {
		t.Errorf("default sent %.0f%% to the saturated a10g, want it kept off", 100*s)
	}
	rrP95, defP95 := res.Report.Targets[0].TTFTMs.P95, res.Report.Targets[1].TTFTMs.P95
	t.Logf(
		"TTFT P95: round robin %v ms, default %v ms; a10g share %.2f vs %.2f",
		rrP95,
		defP95,
		slowShare(rr),
		slowShare(def),
	)
	if !(float64(defP95) < float64(rrP95)) {
		t.Errorf("default's TTFT P95 %v ms is not below round robin's %v ms", defP95, rrP95)
	}
}
