package bench

import (
	"math"
	"slices"

	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
)

// PodStats are one pod's figures at the end of a run, read from its engine.
type PodStats struct {
	// Pod labels the pod (profile-index); Addr is its address.
	Pod  string `json:"pod"`
	Addr string `json:"addr"`
	// Share is the fraction of the policy's requests the pod served (x-switchyard-endpoint).
	Share float64 `json:"share"`
	// Finished counts the requests the engine finished.
	Finished uint64 `json:"finished"`
	// AdapterLoads counts LoRA adapter loads; Preemptions KV preemptions.
	AdapterLoads uint64 `json:"adapter_loads"`
	Preemptions  uint64 `json:"preemptions"`
	// PrefixQueries and PrefixHits are prompt tokens looked up in and found in the prefix cache.
	PrefixQueries uint64 `json:"prefix_queries"`
	PrefixHits    uint64 `json:"prefix_hits"`
	// StepLagP99Ms is the p99 of how far engine steps ended from their schedule (simulated ms):
	// a high figure means the machine could not keep the simulation on time.
	StepLagP99Ms float64 `json:"step_lag_p99_ms"`
	// MaxKV is the highest KV cache use (0..1) the pod showed, read every 50 ms of simulated
	// time while the requests were sent.
	MaxKV float64 `json:"max_kv"`
}

// PolicyStats are one policy's fleet figures.
type PolicyStats struct {
	Policy string     `json:"policy"`
	Pods   []PodStats `json:"pods"`
	// AdapterLoads and Preemptions are summed over the pods.
	AdapterLoads uint64 `json:"adapter_loads"`
	Preemptions  uint64 `json:"preemptions"`
	// EnginePrefixHitRate is prefix-cache hits / queries over the pods (tokens, as vLLM counts).
	EnginePrefixHitRate float64 `json:"engine_prefix_hit_rate"`
	// MaxKV is the highest PodStats.MaxKV over the pods.
	MaxKV float64 `json:"max_kv"`
	// Decisions are the gateway's scheduling outcomes (ok, saturated, no_endpoints, ...), read
	// from its /metrics at the end of the run.
	Decisions map[string]float64 `json:"gateway_decisions,omitempty"`

	prefixQueries, prefixHits uint64
}

// Figures are a run's measurements: loadgen's report (one target per policy) and the pods' own
// counters.
type Figures struct {
	Report   *report.Report `json:"-"`
	Policies []PolicyStats  `json:"policies"`
	// Regional holds a Tier 2 scenario's figures (nil for Tier 1 ones).
	Regional *RegionalFigures `json:"regional,omitempty"`
	// Affinity holds, per policy, where a shared-prefix workload's repeats went (nil for other
	// workloads).
	Affinity []GroupAffinity `json:"group_affinity,omitempty"`
}

func (f Figures) target(policy string) *report.Target {
	if f.Report == nil {
		return nil
	}
	i := slices.IndexFunc(f.Report.Targets, func(t report.Target) bool { return t.Name == policy })
	if i < 0 {
		return nil
	}
	return &f.Report.Targets[i]
}

func (f Figures) has(policy string) bool { return f.target(policy) != nil }

// TTFT returns policy's TTFT percentile p (50, 95 or 99) in ms; +Inf when failures reach it, NaN
// when the policy did not run.
func (f Figures) TTFT(policy string, p int) float64 {
	t := f.target(policy)
	if t == nil {
		return math.NaN()
	}
	switch p {
	case 50:
		return float64(t.TTFTMs.P50)
	case 95:
		return float64(t.TTFTMs.P95)
	default:
		return float64(t.TTFTMs.P99)
	}
}

// ITL returns policy's inter-token latency percentile p (50 or 99) in ms; +Inf when failures
// reach it, NaN when the policy did not run.
func (f Figures) ITL(policy string, p int) float64 {
	t := f.target(policy)
	if t == nil {
		return math.NaN()
	}
	if p == 50 {
		return float64(t.ITLMs.P50)
	}
	return float64(t.ITLMs.P99)
}

// HitRate returns policy's prefix-cache hit rate from the responses' usage (cached / prompt tokens).
func (f Figures) HitRate(policy string) float64 {
	if t := f.target(policy); t != nil {
		return float64(t.PrefixCacheHitRate)
	}
	return math.NaN()
}

// AdapterLoads returns the LoRA adapter loads over policy's pods.
func (f Figures) AdapterLoads(policy string) uint64 {
	for _, p := range f.Policies {
		if p.Policy == policy {
			return p.AdapterLoads
		}
	}
	return 0
}

// Goodput returns the fraction of policy's requests that met the workload's SLO; NaN when the
// policy did not run or the workload sets no SLO.
func (f Figures) Goodput(policy string) float64 {
	if t := f.target(policy); t != nil && t.Goodput != nil {
		return float64(t.Goodput.Fraction)
	}
	return math.NaN()
}
