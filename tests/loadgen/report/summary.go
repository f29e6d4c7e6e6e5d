package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Schema names the JSON layout; it changes only when a field changes meaning or goes away.
const Schema = "switchyard.loadgen.report/v1"

// DefaultBaseline is the target ratios are taken against when it is present and none is named.
const DefaultBaseline = "round-robin"

// Report is the summary of one run.
type Report struct {
	// Schema is always Schema.
	Schema string `json:"schema"`
	// Workload is the workload's name.
	Workload string `json:"workload"`
	// Seed generated the request sequence.
	Seed uint64 `json:"seed"`
	// RateRPS is the mean arrival rate in requests per second (0 for closed loops).
	RateRPS Num `json:"rate_rps"`
	// DurationS is how long arrivals were sent, in seconds.
	DurationS float64 `json:"duration_s"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// ElapsedS is the time from the start to the last response, in seconds.
	ElapsedS float64 `json:"elapsed_s"`
	// Baseline is the target ratios are taken against ("" when none).
	Baseline string `json:"baseline,omitempty"`
	// Targets has one entry per target, in run order.
	Targets []Target `json:"targets"`
	// Trace describes the replayed trace, with the attribution its results must carry (trace
	// workloads only).
	Trace *loadgen.TraceInfo `json:"trace,omitempty"`
	// SLO is the per-request objective goodput is counted against (workloads that set one).
	SLO *SLO `json:"slo,omitempty"`
}

// SLO is a per-request objective in milliseconds (0: not checked).
type SLO struct {
	TTFTMs float64 `json:"ttft_ms"`
	TPOTMs float64 `json:"tpot_ms"`
}

// Goodput counts the requests that met the SLO.
type Goodput struct {
	// Requests met the SLO: succeeded, TTFT and time per output token within it.
	Requests int `json:"requests"`
	// PerS divides them by the arrivals' duration; Fraction by every request sent.
	PerS     Num `json:"per_s"`
	Fraction Num `json:"fraction"`
}

// Percentiles of a latency in milliseconds; failed requests count as "inf".
type Percentiles struct {
	P50 Num `json:"p50"`
	P95 Num `json:"p95"`
	P99 Num `json:"p99"`
}

// Target is one target's figures.
type Target struct {
	// Name and URL identify the target.
	Name string `json:"name"`
	URL  string `json:"url"`
	// Requests counts every request sent (and every one refused by loadgen's in-flight cap).
	Requests int `json:"requests"`
	// OK counts the successful ones; Errors the rest, by kind in ErrorsByKind.
	OK           int            `json:"ok"`
	Errors       int            `json:"errors"`
	ErrorRate    Num            `json:"error_rate"`
	ErrorsByKind map[string]int `json:"errors_by_kind"`
	// TTFTMs is time to first token; ITLMs inter-token latency (a failed request adds
	// max(1, max_tokens-1) infinite gaps); E2EMs end-to-end latency.
	TTFTMs Percentiles `json:"ttft_ms"`
	ITLMs  Percentiles `json:"itl_ms"`
	E2EMs  Percentiles `json:"e2e_ms"`
	// OutputTokens is the sum over successful requests; OutputTokensPerS divides it by the time
	// from the start to this target's last response.
	OutputTokens     int `json:"output_tokens"`
	OutputTokensPerS Num `json:"output_tokens_per_s"`
	// PromptTokens and CachedTokens are summed over successful requests; PrefixCacheHitRate is
	// CachedTokens/PromptTokens (0 when the server does not report cached tokens).
	PromptTokens       int `json:"prompt_tokens"`
	CachedTokens       int `json:"cached_tokens"`
	PrefixCacheHitRate Num `json:"prefix_cache_hit_rate"`
	// EndpointShare is the fraction of requests per x-switchyard-endpoint (the target name when
	// absent); ClusterShare, RegionShare and RouteShare per x-switchyard-cluster, -region and
	// -route, present only when some response carried the header ("none" counts the others).
	EndpointShare map[string]float64 `json:"endpoint_share"`
	ClusterShare  map[string]float64 `json:"cluster_share,omitempty"`
	RegionShare   map[string]float64 `json:"region_share,omitempty"`
	RouteShare    map[string]float64 `json:"route_share,omitempty"`
	// ByClientRegion has the TTFT percentiles of each client region (workloads with regions).
	ByClientRegion map[string]Percentiles `json:"by_client_region,omitempty"`
	// Ratios divides this target's figures by the baseline's (keys in RatioKeys).
	Ratios map[string]Num `json:"ratios,omitempty"`
	// TTFTCDF is the TTFT distribution for plots: at most CDFPoints points, ending at the success
	// fraction (failed requests never arrive).
	TTFTCDF []CDFPoint `json:"ttft_cdf"`
	// Timeline counts requests per second of sending time.
	Timeline []Bucket `json:"timeline"`
	// Goodput counts the requests that met the report's SLO (present with an SLO).
	Goodput *Goodput `json:"goodput,omitempty"`
}

// CDFPoint is one point of a cumulative distribution.
type CDFPoint struct {
	// Ms is the latency in milliseconds.
	Ms float64 `json:"ms"`
	// Frac is the fraction of all requests at or below Ms.
	Frac float64 `json:"frac"`
}

// Bucket is one second of the run.
type Bucket struct {
	// Second is the bucket's start, in seconds from the start of the run.
	Second int `json:"second"`
	// Sent, OK and Errors count the requests sent in this second by outcome.
	Sent   int `json:"sent"`
	OK     int `json:"ok"`
	Errors int `json:"errors"`
}

// CDFPoints bounds the TTFT CDF kept per target.
const CDFPoints = 200

// RatioKeys are the keys of Target.Ratios.
var RatioKeys = []string{
	"ttft_p50",
	"ttft_p95",
	"ttft_p99",
	"itl_p50",
	"itl_p99",
	"e2e_p50",
	"e2e_p95",
	"e2e_p99",
	"output_tokens_per_s",
}

// Summarize computes the report of res. baseline names the target ratios are taken against; ""
// picks DefaultBaseline when present and otherwise leaves ratios out.
func Summarize(res *loadgen.Result, baseline string) (*Report, error) {
	r := &Report{
		Schema: Schema, Workload: res.Workload, Seed: res.Seed, RateRPS: Num(res.Rate),
		DurationS: res.Duration.Seconds(), Started: res.Started, ElapsedS: res.Elapsed.Seconds(),
		Trace: res.Trace,
	}
	if res.SLO != nil {
		r.SLO = &SLO{TTFTMs: ms(res.SLO.TTFT), TPOTMs: ms(res.SLO.TPOT)}
	}
	for i := range res.Targets {
		t := summarizeTarget(&res.Targets[i])
		if res.SLO != nil {
			t.Goodput = goodput(res.Targets[i].Samples, res.SLO, res.Duration)
		}
		r.Targets = append(r.Targets, t)
	}
	if err := r.SetBaseline(baseline); err != nil {
		return nil, err
	}
	return r, nil
}

// SetBaseline (re)computes every target's ratios against the target named baseline ("" picks
// DefaultBaseline when present, else clears ratios).
func (r *Report) SetBaseline(baseline string) error {
	base := slices.IndexFunc(r.Targets, func(t Target) bool { return t.Name == baseline })
	if baseline == "" {
		base = slices.IndexFunc(r.Targets, func(t Target) bool { return t.Name == DefaultBaseline })
	} else if base < 0 {
		return fmt.Errorf("report: baseline %q is not a target", baseline)
	}
	r.Baseline = ""
	for i := range r.Targets {
		r.Targets[i].Ratios = nil
	}
	if base < 0 {
		return nil
	}
	r.Baseline = r.Targets[base].Name
	b := r.Targets[base].ratioFigures()
	for i := range r.Targets {
		t := r.Targets[i].ratioFigures()
		r.Targets[i].Ratios = make(map[string]Num, len(RatioKeys))
		for k, key := range RatioKeys {
			r.Targets[i].Ratios[key] = ratio(t[k], b[k])
		}
	}
	return nil
}

// ratioFigures lists the figures named by RatioKeys, in order.
func (t *Target) ratioFigures() []Num {
	return []Num{t.TTFTMs.P50, t.TTFTMs.P95, t.TTFTMs.P99, t.ITLMs.P50, t.ITLMs.P99,
		t.E2EMs.P50, t.E2EMs.P95, t.E2EMs.P99, t.OutputTokensPerS}
}

func percentiles(values []float64) Percentiles {
	slices.Sort(values)
	return Percentiles{P50: Percentile(values, 50), P95: Percentile(values, 95), P99: Percentile(values, 99)}
}

// goodput counts the samples that met slo, per second of d.
func goodput(samples []loadgen.Sample, slo *workload.SLO, d time.Duration) *Goodput {
	g := &Goodput{}
	for i := range samples {
		s := &samples[i]
		if s.OK() && slo.Met(s.TTFT, s.E2E, s.OutputTokens) {
			g.Requests++
		}
	}
	if d > 0 {
		g.PerS = Num(float64(g.Requests) / d.Seconds())
	}
	if len(samples) > 0 {
		g.Fraction = Num(float64(g.Requests) / float64(len(samples)))
	}
	return g
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

var inf = math.Inf(1)
