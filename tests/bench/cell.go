package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// CellSchema names the layout of a sweep cell's results file.
const CellSchema = "switchyard.bench.sweep-cell/v1"

// CellConfig is everything that decides a sweep cell's figures: a results file is reused only
// when the configuration it was measured with equals the one asked for, so changing any of
// these (a policy, the duration, the SLO, a profile file's bytes, the measured capacity) runs
// the cell again.
type CellConfig struct {
	Schema string `json:"schema"`
	// Kind is "sweep" or "sensitivity".
	Kind string `json:"kind"`
	// Scenario, Workload and Fleet name what ran (Fleet as "4 × h100 + 4 × a10g").
	Scenario string `json:"scenario"`
	Workload string `json:"workload"`
	Fleet    string `json:"fleet"`
	// Load is the offered load (busiest phase / fleet capacity); Seed the request sequence's.
	Load float64 `json:"load"`
	Seed uint64  `json:"seed"`
	// Policies are the gateways compared, side by side, in this order.
	Policies []string `json:"policies"`
	// PolicyConfigs maps a policy run from an EndpointPickerConfig file to the file's SHA-256.
	PolicyConfigs map[string]string `json:"policy_configs,omitempty"`
	// CapacityRPS is the fleet capacity the rate is taken from (simulated req/s).
	CapacityRPS float64 `json:"capacity_rps"`
	// DurationS is the arrivals' duration (simulated s; 0 = the workload's).
	DurationS float64 `json:"duration_s"`
	// TimeScale, ScrapeIntervalMs, Physics and ReportCachedTokens are the bench's settings.
	TimeScale          float64 `json:"time_scale"`
	ScrapeIntervalMs   float64 `json:"scrape_interval_ms"`
	Physics            string  `json:"physics,omitempty"`
	ReportCachedTokens bool    `json:"report_cached_tokens"`
	// SLOTTFTMs and SLOITLMs are goodput's bounds (simulated ms).
	SLOTTFTMs float64 `json:"slo_ttft_ms"`
	SLOITLMs  float64 `json:"slo_itl_ms"`
	// Oracle is whether the simulated oracle replayed the same requests.
	Oracle bool `json:"oracle"`
}

// equal reports whether two configurations are the same (their JSON forms are).
func (c *CellConfig) equal(o *CellConfig) bool {
	a, err1 := json.Marshal(c)
	b, err2 := json.Marshal(o)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// PolicyFigures are one policy's figures in one cell. Latencies are real milliseconds (the
// simulated ones × the time scale), failures infinite in every percentile.
type PolicyFigures struct {
	Policy string `json:"policy"`
	// Requests counts every request sent; Errors the failed ones.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// TTFTMs are the TTFT percentiles (nearest rank over every request sent).
	TTFTMs Percentiles `json:"ttft_ms"`
	// MeanITLMs is the mean gap between tokens over the successful requests' gaps.
	MeanITLMs report.Num `json:"mean_itl_ms"`
	// OutputTokensPerS is the successful requests' output tokens per second of the run (real).
	OutputTokensPerS report.Num `json:"output_tokens_per_s"`
	// Goodput is the share of every request sent that succeeded within the SLO.
	Goodput report.Num `json:"goodput"`
}

// CellResult is one cell's results file.
type CellResult struct {
	Config CellConfig `json:"config"`
	// Policies holds one entry per policy, in Config.Policies' order.
	Policies []PolicyFigures `json:"policies"`
	// Oracle is the simulated oracle on the same requests (with Config.Oracle).
	Oracle *PolicyFigures `json:"oracle,omitempty"`
	// RateRPS is the mean arrival rate (simulated req/s).
	RateRPS float64 `json:"rate_rps"`
	// LoadAvg is the machine's 1-minute load average at the start and end of the run.
	LoadAvg [2]string `json:"load_avg"`
	// ElapsedS is the wall time the cell took; Finished when it ended.
	ElapsedS float64   `json:"elapsed_s"`
	Finished time.Time `json:"finished"`
}

// Policy returns the figures of policy ("oracle" for the oracle's), or nil.
func (r *CellResult) Policy(policy string) *PolicyFigures {
	if policy == OraclePolicy {
		return r.Oracle
	}
	i := slices.IndexFunc(r.Policies, func(p PolicyFigures) bool { return p.Policy == policy })
	if i < 0 {
		return nil
	}
	return &r.Policies[i]
}

// OraclePolicy names the oracle's column in sweep tables.
const OraclePolicy = "oracle"

// readCell returns the results file at path when it exists and was measured with cfg; ok is
// false when the cell must run (no file, an unreadable one, or another configuration).
func readCell(path string, cfg *CellConfig) (res *CellResult, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bench: read cell: %w", err)
	}
	var r CellResult
	if json.Unmarshal(b, &r) != nil || r.Config.Schema != CellSchema || !r.Config.equal(cfg) {
		return nil, false, nil // stale or torn: measure again
	}
	return &r, true, nil
}

// writeCell writes res to path atomically (a temporary file renamed into place), so an
// interrupted sweep never leaves a file a resumed one would trust.
func writeCell(path string, res *CellResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: write cell: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: write cell: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cell-*.json")
	if err != nil {
		return fmt.Errorf("bench: write cell: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("bench: write cell: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("bench: write cell: %w", err)
	}
	return nil
}

// policyFigures reads each policy's figures from a run: the report's percentiles, throughput
// and goodput, and the mean inter-token gap from the samples.
func policyFigures(rep *report.Report, samples *loadgen.Result) []PolicyFigures {
	out := make([]PolicyFigures, len(rep.Targets))
	for i, t := range rep.Targets {
		pf := PolicyFigures{Policy: t.Name, Requests: t.Requests, Errors: t.Errors,
			TTFTMs:    Percentiles{t.TTFTMs.P50, t.TTFTMs.P95, t.TTFTMs.P99},
			MeanITLMs: report.Num(math.NaN()), OutputTokensPerS: t.OutputTokensPerS, Goodput: report.Num(math.NaN())}
		if t.Goodput != nil {
			pf.Goodput = t.Goodput.Fraction
		}
		if samples != nil && i < len(samples.Targets) {
			pf.MeanITLMs = meanITL(samples.Targets[i].Samples)
		}
		out[i] = pf
	}
	return out
}

// meanITL is the mean of every gap between tokens of the successful samples, in ms (NaN
// without a gap).
func meanITL(samples []loadgen.Sample) report.Num {
	var sum time.Duration
	var n int
	for i := range samples {
		if !samples[i].OK() {
			continue
		}
		for _, g := range samples[i].ITLs {
			sum += g
			n++
		}
	}
	if n == 0 {
		return report.Num(math.NaN())
	}
	return report.Num(float64(sum) / float64(n) / float64(time.Millisecond))
}

// oracleFigures replays reqs (the cell's sequence, w in simulated time) in the oracle on sc's
// fleet and returns its figures in real ms at time scale ts: every request on the pod that gives
// it the earliest first token, with no gateway, network or scrape lag.
func oracleFigures(
	ctx context.Context,
	sc Scenario,
	w *workload.Workload,
	reqs []workload.Request,
	ts float64,
) (*PolicyFigures, error) {
	cfg := oracle.DefaultConfig()
	for _, p := range sc.Pools {
		for range p.Count {
			cfg.Profiles = append(cfg.Profiles, p.Profile)
		}
	}
	cfg.MaxLoras = sc.MaxLoras
	rep, err := oracle.Replay(ctx, cfg, w, reqs)
	if err != nil {
		return nil, fmt.Errorf("bench: oracle: %w", err)
	}
	return oracleReportFigures(rep, w.SLO, ts), nil
}

// oracleReportFigures summarizes an oracle replay like a measured policy, scaled to real time.
func oracleReportFigures(rep *oracle.Report, slo *workload.SLO, ts float64) *PolicyFigures {
	msOf := func(d time.Duration) float64 { return float64(d) * ts / float64(time.Millisecond) }
	ttft := make([]float64, len(rep.Requests))
	var gaps time.Duration
	var tokens, gapCount, good int
	var end time.Duration
	for i, q := range rep.Requests {
		ttft[i] = msOf(q.TTFT)
		tokens += q.OutputTokens
		if q.OutputTokens > 1 {
			gaps += q.E2E - q.TTFT
			gapCount += q.OutputTokens - 1
		}
		if slo == nil || slo.Met(q.TTFT, q.E2E, q.OutputTokens) {
			good++
		}
		end = max(end, q.At+q.E2E)
	}
	slices.Sort(ttft)
	pf := &PolicyFigures{Policy: OraclePolicy, Requests: len(rep.Requests),
		TTFTMs:    Percentiles{report.Percentile(ttft, 50), report.Percentile(ttft, 95), report.Percentile(ttft, 99)},
		MeanITLMs: report.Num(math.NaN()), OutputTokensPerS: report.Num(math.NaN()), Goodput: report.Num(math.NaN())}
	if gapCount > 0 {
		pf.MeanITLMs = report.Num(msOf(gaps) / float64(gapCount))
	}
	if end > 0 {
		pf.OutputTokensPerS = report.Num(float64(tokens) / (end.Seconds() * ts))
	}
	if len(rep.Requests) > 0 {
		pf.Goodput = report.Num(float64(good) / float64(len(rep.Requests)))
	}
	return pf
}
