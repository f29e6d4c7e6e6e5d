package oracle

import (
	"math"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Report is the outcome of a replay.
type Report struct {
	// Requests holds one result per request, in arrival order.
	Requests []Result `json:"requests"`
	// Pods describes each pod, in fleet order.
	Pods []PodReport `json:"pods"`
}

// Result is one request's placement and simulated timings. Durations are simulated time.
type Result struct {
	// Index is the request's index in the workload's sequence; At its arrival time.
	Index int           `json:"index"`
	At    time.Duration `json:"at_ns"`
	// Region is the client region that sent it ("" without regions).
	Region string `json:"region,omitempty"`
	// Pod is the index of the pod that served the request.
	Pod int `json:"pod"`
	// RTT is the round trip between the client and the pod (Config.Network), included in TTFT
	// and E2E.
	RTT time.Duration `json:"rtt_ns,omitempty"`
	// TTFT is the time from arrival to the first token, API overhead included; E2E to the last.
	TTFT time.Duration `json:"ttft_ns"`
	E2E  time.Duration `json:"e2e_ns"`
	// PredictedTTFT is the time to first token the oracle foresaw when it placed the request,
	// before later arrivals joined the pod (0 when a fixed assignment placed it, unless
	// Config.Compare).
	PredictedTTFT time.Duration `json:"predicted_ttft_ns"`
	// Candidates holds, with Config.Compare, the time to first token the request would have had
	// on each pod when it was placed, in fleet order (-1 for a pod out of its reach).
	Candidates []time.Duration `json:"candidates_ns,omitempty"`
	// PromptTokens, CachedTokens and OutputTokens count the prompt, its part served from the
	// prefix cache, and the generated tokens.
	PromptTokens int `json:"prompt_tokens"`
	CachedTokens int `json:"cached_tokens"`
	OutputTokens int `json:"output_tokens"`
	// Preemptions counts how often the request was preempted.
	Preemptions int `json:"preemptions"`
}

// PodReport is one pod's share of the work and its engine's counters.
type PodReport struct {
	// Profile is the pod's GPU profile.
	Profile string `json:"profile"`
	// Requests is the number of requests placed on the pod.
	Requests int `json:"requests"`
	// AdapterLoads and Preemptions are the engine's counts.
	AdapterLoads uint64 `json:"adapter_loads"`
	Preemptions  uint64 `json:"preemptions"`
	// PrefixQueries and PrefixHits count prompt tokens looked up in and found in the prefix cache.
	PrefixQueries uint64 `json:"prefix_queries"`
	PrefixHits    uint64 `json:"prefix_hits"`
}

func newReport(pods []*pod, reqs []workload.Request, placed []placement) *Report {
	rep := &Report{Requests: make([]Result, len(reqs)), Pods: make([]PodReport, len(pods))}
	for i, pl := range placed {
		p := pl.h.Progress()
		rep.Requests[i] = Result{
			Index: reqs[i].Index, At: reqs[i].At, Region: reqs[i].Region, Pod: pl.pod, RTT: pl.rtt,
			TTFT: p.FirstToken - p.Arrival + pl.rtt, E2E: p.LastToken - p.Arrival + pl.rtt, PredictedTTFT: pl.predicted,
			PromptTokens: pl.promptTokens, CachedTokens: p.CachedTokens, OutputTokens: p.Generated,
			Preemptions: p.Preemptions, Candidates: pl.candidates,
		}
		rep.Pods[pl.pod].Requests++
	}
	for i, p := range pods {
		st := p.sim.Engine().Snapshot().Stats
		pr := &rep.Pods[i]
		pr.Profile = p.cfg.Profile
		pr.AdapterLoads, pr.Preemptions = st.AdapterLoads, st.Preemptions
		pr.PrefixQueries, pr.PrefixHits = st.PrefixQueries, st.PrefixHits
	}
	return rep
}

// Summary holds a report's headline figures.
type Summary struct {
	// Requests is the number of requests.
	Requests int `json:"requests"`
	// TTFT and E2E are nearest-rank percentiles over every request.
	TTFT Percentiles `json:"ttft"`
	E2E  Percentiles `json:"e2e"`
	// HitRate is cached prompt tokens over prompt tokens (as loadgen computes it from usage).
	HitRate float64 `json:"prefix_hit_rate"`
	// Share is each pod's fraction of the requests, in fleet order.
	Share []float64 `json:"pod_share"`
	// ProfileShare is each profile's fraction of the requests.
	ProfileShare map[string]float64 `json:"profile_share"`
	// AdapterLoads and Preemptions are summed over the pods.
	AdapterLoads uint64 `json:"adapter_loads"`
	Preemptions  uint64 `json:"preemptions"`
}

// Percentiles are P50, P95, P99 and the mean of a set of durations.
type Percentiles struct {
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	P99  time.Duration `json:"p99_ns"`
	Mean time.Duration `json:"mean_ns"`
}

// Summary computes the report's headline figures.
func (r *Report) Summary() Summary { return r.summary(func(Result) bool { return true }) }

// RegionSummary computes the headline figures of the requests sent by region's clients; its
// shares are of those requests, and its engine counters are the whole fleet's.
func (r *Report) RegionSummary(region string) Summary {
	return r.summary(func(q Result) bool { return q.Region == region })
}

func (r *Report) summary(keep func(Result) bool) Summary {
	s := Summary{Share: make([]float64, len(r.Pods)), ProfileShare: map[string]float64{}}
	ttft := make([]time.Duration, 0, len(r.Requests))
	e2e := make([]time.Duration, 0, len(r.Requests))
	placed := make([]int, len(r.Pods))
	var prompt, cached int
	for _, q := range r.Requests {
		if !keep(q) {
			continue
		}
		s.Requests++
		ttft, e2e = append(ttft, q.TTFT), append(e2e, q.E2E)
		prompt += q.PromptTokens
		cached += q.CachedTokens
		placed[q.Pod]++
	}
	s.TTFT, s.E2E = percentiles(ttft), percentiles(e2e)
	if prompt > 0 {
		s.HitRate = float64(cached) / float64(prompt)
	}
	for i, p := range r.Pods {
		if s.Requests > 0 {
			s.Share[i] = float64(placed[i]) / float64(s.Requests)
			s.ProfileShare[p.Profile] += s.Share[i]
		}
		s.AdapterLoads += p.AdapterLoads
		s.Preemptions += p.Preemptions
	}
	return s
}

func percentiles(ds []time.Duration) Percentiles {
	if len(ds) == 0 {
		return Percentiles{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	return Percentiles{P50: NearestRank(sorted, 0.50), P95: NearestRank(sorted, 0.95),
		P99: NearestRank(sorted, 0.99), Mean: sum / time.Duration(len(sorted))}
}

// NearestRank returns the q-quantile (0 < q <= 1) of sorted, ascending durations by the
// nearest-rank method (the smallest value with at least q of the values at or below it), as the
// benchmark reports compute percentiles. It returns 0 for an empty slice.
func NearestRank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
