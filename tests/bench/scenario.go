package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Pool is a group of identical pods in a scenario's fleet.
type Pool struct {
	// Profile is the simulated GPU (modelsim profile name).
	Profile string
	// Count is the number of pods.
	Count int
}

// RolePool is a pool whose pods have a prefill/decode role: modelsim's --role and the
// llm-d.ai/role label in the gateway's endpoints file ("" is both, and no label).
type RolePool struct {
	Pool
	Role string
}

// Scenario is one routing-quality benchmark: a fleet shape, a workload and the target the shipped
// default profile must meet.
type Scenario struct {
	// Name selects the scenario (--scenario).
	Name string
	// Workload is the loadgen workload sent.
	Workload string
	// Pools make up each policy's fleet, in address order.
	Pools []Pool
	// MaxLoras is the adapter slots per pod; the workload's adapters are served when > 0.
	MaxLoras int
	// Regions, when set, make the scenario a Tier 2 one: each region's clusters (gateways with
	// their pods) and a global router per region, compared across RouterModes instead of gateway
	// policies. Pools is unused then.
	Regions []Region
	// Links are the simulated round trips between regions (Tier 2 scenarios).
	Links []Link
	// Target states the target in words; Check decides it from a run's figures.
	Target string
	Check  func(f Figures) Verdict
	// Quick is the arrivals' duration of a --quick run (0 = quickDuration).
	Quick time.Duration
	// Policies, when set, are the policies this scenario compares (unless --policies says
	// otherwise), Baseline the one its ratios are against (default Baseline), and PolicyPools a
	// policy's own fleet instead of Pools (a prefill/decode fleet against an aggregated one of
	// equal pods). Sweeps, which compare the common policies, skip such scenarios.
	Policies    []string
	Baseline    string
	PolicyPools map[string][]RolePool
	// PolicyConfigs are EndpointPickerConfig files (their text) of the scenario's own policies;
	// a Config.PolicyConfigs file for the same policy wins.
	PolicyConfigs map[string]string
	// Shape, when set, adjusts a copy of the loaded workload (its shared-prefix groups, say)
	// before its rate is set from the fleet's capacity.
	Shape func(w *workload.Workload)
	// Replicas runs a policy as several gateway replicas behind a round-robin front (a
	// Kubernetes Service's spread) instead of one gateway.
	Replicas map[string]Replicas
	// KVEvents makes every pod publish KV cache events to its gateway's --kv-events-endpoint
	// (the precise-prefix-cache-scorer's input).
	KVEvents bool

	// roles are the roles of Pools, set by forPolicy (nil: every pod both).
	roles []string
}

// baseline is the policy the scenario's ratios (and its check) are taken against: its Baseline,
// else the first of its own policies, else Baseline.
func (s Scenario) baseline() string {
	if s.Baseline != "" {
		return s.Baseline
	}
	if len(s.Policies) > 0 {
		return s.Policies[0]
	}
	return Baseline
}

// forPolicy returns the scenario with policy's fleet as its Pools.
func (s Scenario) forPolicy(policy string) Scenario {
	if pools, ok := s.PolicyPools[policy]; ok {
		s.Pools, s.roles = nil, nil
		for _, p := range pools {
			s.Pools, s.roles = append(s.Pools, p.Pool), append(s.roles, p.Role)
		}
	}
	return s
}

// quickDuration is a --quick run's arrivals for scenarios that name no Quick duration.
const quickDuration = 15 * time.Second

// quick returns the arrivals' duration of a --quick run.
func (s Scenario) quick() time.Duration {
	if s.Quick > 0 {
		return s.Quick
	}
	return quickDuration
}

// Region is one region of a Tier 2 scenario.
type Region struct {
	Name     string
	Clusters []Cluster
}

// Cluster is one cluster of a Tier 2 scenario: a gateway in front of its pods.
type Cluster struct {
	Name  string
	Pools []Pool
}

// Link is the simulated round trip between two regions.
type Link struct {
	A, B string
	RTT  time.Duration
}

// Verdict is whether a scenario's target was met, with the figures that decided it.
type Verdict struct {
	Met    bool
	Detail string
}

// Policies are the gateway profiles compared side by side; round-robin is the baseline. Every
// one but default is a baseline: plain ones (a Kubernetes Service's round robin, least request,
// random), the weighted ones with each pod's weight set from its measured capacity
// (weighted-round-robin, Envoy's p2c, HAProxy's leastconn), and GIE's configurations.
var Policies = []string{"round-robin", "least-request", "random", "weighted-round-robin", "p2c", "leastconn",
	"gie-default", "gie-lora", "default"}

// Baseline is the policy ratios are taken against.
const Baseline = "round-robin"

// Shipped is the policy the scenarios' targets are about.
const Shipped = "default"

var scenarios = []Scenario{
	{
		Name: "mixed-fleet", Workload: "mixed-fleet",
		Pools:  []Pool{{"h100", 4}, {"a10g", 4}},
		Target: "default P95 TTFT <= 3% of round robin's and <= the best baseline's",
		Check: func(f Figures) Verdict {
			d, rr := f.TTFT(Shipped, 95), f.TTFT(Baseline, 95)
			best, b := f.bestBaseline(func(p string) float64 { return f.TTFT(p, 95) }, false)
			return Verdict{
				d <= 0.03*rr && d <= b,
				fmt.Sprintf(
					"P95: default %s, %.1f%% of round robin (%s); best baseline %s %s",
					ms(d),
					100*d/rr,
					ms(rr),
					best,
					ms(b),
				),
			}
		},
	},
	{
		Name: "bursty", Workload: "bursty",
		Pools:  []Pool{{"h100", 4}, {"a10g", 4}},
		Target: "default P99 TTFT <= 2% of round robin's and <= the best baseline's",
		Check: func(f Figures) Verdict {
			d, rr := f.TTFT(Shipped, 99), f.TTFT(Baseline, 99)
			best, b := f.bestBaseline(func(p string) float64 { return f.TTFT(p, 99) }, false)
			return Verdict{
				d <= 0.02*rr && d <= b,
				fmt.Sprintf(
					"P99: default %s, %.1f%% of round robin (%s); best baseline %s %s",
					ms(d),
					100*d/rr,
					ms(rr),
					best,
					ms(b),
				),
			}
		},
	},
	{
		Name: "shared-prefix", Workload: "shared-prefix",
		Pools:  []Pool{{"h100", 8}},
		Target: "default prefix-cache hit rate >= 2x round robin's and P95 TTFT <= the best baseline's",
		Check: func(f Figures) Verdict {
			hd, hr := f.HitRate(Shipped), f.HitRate(Baseline)
			d := f.TTFT(Shipped, 95)
			best, b := f.bestBaseline(func(p string) float64 { return f.TTFT(p, 95) }, false)
			return Verdict{hd >= 2*hr && d <= b,
				fmt.Sprintf("hit rate: default %.1f%%, round robin %.1f%% (%.2fx); P95: default %s, best baseline %s %s",
					100*hd, 100*hr, hd/hr, ms(d), best, ms(b))}
		},
	},
	{
		Name: "multi-lora", Workload: "multi-lora",
		Pools: []Pool{{"h100", 8}}, MaxLoras: 4,
		Target: "default: fewer adapter loads than the baseline with the fewest and lower P95 TTFT than the best baseline",
		Check: func(f Figures) Verdict {
			ld := f.AdapterLoads(Shipped)
			fewest, lb := f.bestBaseline(func(p string) float64 { return float64(f.AdapterLoads(p)) }, false)
			d := f.TTFT(Shipped, 95)
			best, b := f.bestBaseline(func(p string) float64 { return f.TTFT(p, 95) }, false)
			return Verdict{float64(ld) < lb && d < b,
				fmt.Sprintf("adapter loads: default %d, fewest baseline %s %.0f; P95: default %s, best baseline %s %s",
					ld, fewest, lb, ms(d), best, ms(b))}
		},
	},
	precisePrefix,
	replicasScenario,
	pdLongPrompt,
	regionBurst,
	regionBurstOverload,
	traceConversation,
	traceAzureConv,
	{
		Name: "uniform-steady", Workload: "uniform-steady",
		Pools:  []Pool{{"h100", 8}},
		Target: "default P50 and P95 TTFT within ±10% of round robin's and at most 10% above the best baseline's",
		Check: func(f Figures) Verdict {
			r50 := f.TTFT(Shipped, 50) / f.TTFT(Baseline, 50)
			r95 := f.TTFT(Shipped, 95) / f.TTFT(Baseline, 95)
			best, b := f.bestBaseline(func(p string) float64 { return f.TTFT(p, 95) }, false)
			rb := f.TTFT(Shipped, 95) / b
			return Verdict{
				within(r50, 0.1) && within(r95, 0.1) && rb <= 1.1,
				fmt.Sprintf(
					"default / round robin: P50 %.3f, P95 %.3f; P95 / best baseline %s (%s): %.3f",
					r50,
					r95,
					best,
					ms(b),
					rb,
				),
			}
		},
	},
}

// bestBaseline returns the baseline (every policy run but Shipped; the oracle is not a policy)
// whose value of metric is best, lowest or, with higherBetter, highest, and that value. NaN
// values (a policy without the figure) are skipped; with none left it returns "none" and +Inf
// (-Inf with higherBetter), which every target passes.
func (f Figures) bestBaseline(metric func(policy string) float64, higherBetter bool) (string, float64) {
	name, best := "none", math.Inf(1)
	if higherBetter {
		best = math.Inf(-1)
	}
	if f.Report == nil {
		return name, best
	}
	for _, t := range f.Report.Targets {
		v := metric(t.Name)
		if t.Name == Shipped || math.IsNaN(v) {
			continue
		}
		if name == "none" || (!higherBetter && v < best) || (higherBetter && v > best) {
			name, best = t.Name, v
		}
	}
	return name, best
}

func within(r, tol float64) bool { return r >= 1-tol && r <= 1+tol }

func ms(v float64) string { return fmt.Sprintf("%.0f ms", v) }

// Scenarios returns every scenario, in the order.
func Scenarios() []Scenario { return slices.Clone(scenarios) }

// Lookup returns the scenario called name.
func Lookup(name string) (Scenario, error) {
	for _, s := range scenarios {
		if s.Name == name {
			return s, nil
		}
	}
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.Name
	}
	return Scenario{}, fmt.Errorf("bench: unknown scenario %q (have %s)", name, strings.Join(names, ", "))
}

// Pods returns the number of pods in one policy's fleet.
func (s Scenario) Pods() int {
	n := 0
	for _, p := range s.allPools() {
		n += p.Count
	}
	return n
}

// Regional reports whether the scenario compares global-router modes over several regions.
func (s Scenario) Regional() bool { return len(s.Regions) > 0 }

// allPools returns every pool of the fleet, the regions' clusters' included, in order.
func (s Scenario) allPools() []Pool {
	out := slices.Clone(s.Pools)
	for _, r := range s.Regions {
		for _, c := range r.Clusters {
			out = append(out, c.Pools...)
		}
	}
	return out
}

// RTT returns the simulated round trip between regions a and b (0 within a region).
func (s Scenario) RTT(a, b string) time.Duration {
	for _, l := range s.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			return l.RTT
		}
	}
	return 0
}
