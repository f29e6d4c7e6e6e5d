package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// quietSettle is how long (simulated) after a burst ends a request still counts as in it when
// the steady regions' requests between bursts are counted.
const quietSettle = 3 * time.Second

// runRegional runs a Tier 2 scenario: one regional stack per router mode, the same request
// sequence to each (interleaved, every region's clients to their own region's router), w in real
// time, cfg.Repeat times on fresh stacks, pooled; then the oracle replays sim, the same workload
// in simulated time.
func runRegional(ctx context.Context, cfg *Config, sim, w *workload.Workload, res *Result) error {
	burst, arrival, err := burstRegion(w)
	if err != nil {
		return err
	}
	reqs, err := workload.Generate(sim, sim.Seed) // the sequence every run sends, in simulated time
	if err != nil {
		return err
	}
	var pooled *loadgen.Result
	var modes []ModeFigures
	for rep := range max(cfg.Repeat, 1) {
		if cfg.Progress != nil && cfg.Repeat > 1 {
			fmt.Fprintf(cfg.Progress, "bench %s: run %d of %d\n", cfg.Scenario.Name, rep+1, cfg.Repeat)
		}
		lres, ms, err := runRegionalOnce(ctx, cfg, sim, reqs, w, burst)
		res.LoadAvg[1] = loadAvg()
		if err != nil {
			return err
		}
		pooled = poolRuns(pooled, lres, arrival.Period)
		modes = addModeCounts(modes, ms)
	}
	if res.Report, err = report.Summarize(pooled, regionalBaseline(cfg.Policies)); err != nil {
		return err
	}
	res.Samples = pooled
	rf := &RegionalFigures{BurstRegion: burst}
	settle := time.Duration(float64(quietSettle) * cfg.TimeScale)
	for i, m := range modes {
		if p, ok := res.Report.Targets[i].ByClientRegion[burst]; ok {
			m.BurstTTFTMs = Percentiles{p.P50, p.P95, p.P99}
		}
		countSamples(&m, pooled.Targets[i].Samples, burst, arrival, settle)
		rf.Modes = append(rf.Modes, m)
	}
	if rf.Oracle, err = regionalOracle(ctx, cfg.Scenario, sim, reqs, burst, cfg.TimeScale); err != nil {
		return err
	}
	res.Regional = rf
	return nil
}

// runRegionalOnce starts a stack per mode, sends w to them and returns loadgen's result and, per
// mode, the routers' counters (overflow answers, reasons for leaving, forward attempts) and the
// burst region's placements judged in the simulator against sim, w in simulated time, whose
// sequence is reqs.
func runRegionalOnce(
	ctx context.Context,
	cfg *Config,
	sim *workload.Workload,
	reqs []workload.Request,
	w *workload.Workload,
	burst string,
) (*loadgen.Result, []ModeFigures, error) {
	stacks, err := startRegionalStacks(ctx, cfg, w)
	defer closeRegionalStacks(stacks, cfg.Logger)
	if err != nil {
		return nil, nil, err
	}
	lcfg := loadgen.DefaultConfig()
	lcfg.Workload, lcfg.Progress = w, cfg.Progress
	targets := make([]loadgen.Target, len(stacks))
	for i, st := range stacks {
		targets[i] = st.target()
	}
	lres, err := loadgen.Run(ctx, lcfg, targets)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: loadgen: %w", err)
	}
	modes := make([]ModeFigures, len(stacks))
	for i, st := range stacks {
		modes[i] = st.counters()
		addrs := make([][]string, len(st.fleets))
		for k, f := range st.fleets {
			addrs[k] = f.Addrs()
		}
		if modes[i].Quickest, err = quickestFigures(
			ctx,
			cfg.Scenario,
			sim,
			reqs,
			lres.Targets[i].Samples,
			addrs,
			burst,
			cfg.TimeScale,
		); err != nil {
			return nil, nil, err
		}
	}
	return lres, modes, nil
}

// poolRuns appends run r's samples to pooled (nil: r becomes the pool), placing r after the
// runs before it: its send and schedule times move on by a whole number of burst periods past
// the pool's elapsed time, so the timeline and throughput read as one long run and each
// request keeps its place in the burst cycle.
func poolRuns(pooled, r *loadgen.Result, period time.Duration) *loadgen.Result {
	if pooled == nil {
		return r
	}
	shift := pooled.Elapsed
	if period > 0 {
		shift = (shift + period - 1) / period * period
	}
	for i := range pooled.Targets {
		for _, s := range r.Targets[i].Samples {
			s.Scheduled += shift
			s.Sent += shift
			pooled.Targets[i].Samples = append(pooled.Targets[i].Samples, s)
		}
	}
	pooled.Duration += r.Duration
	pooled.Elapsed = shift + r.Elapsed
	return pooled
}

// addModeCounts adds one run's router counters to the pool's, mode by mode (the pool is nil
// before the first run).
func addModeCounts(pool, run []ModeFigures) []ModeFigures {
	if pool == nil {
		return run
	}
	for i := range pool {
		p, r := &pool[i], &run[i]
		p.OverflowAnswered = p.OverflowAnswered.add(r.OverflowAnswered)
		p.PredictionRatio = p.PredictionRatio.add(r.PredictionRatio)
		p.EstimateRatio = addByKey(p.EstimateRatio, r.EstimateRatio)
		p.LeftBecause = addByKey(p.LeftBecause, r.LeftBecause)
		p.Attempts = addByKey(p.Attempts, r.Attempts)
		p.Quickest.add(r.Quickest)
	}
	return pool
}

// addByKey adds src's counts to dst's, key by key (a region, or a route), a nil dst becoming a
// new map.
func addByKey(dst, src map[string]ChoiceCounts) map[string]ChoiceCounts {
	if dst == nil {
		dst = map[string]ChoiceCounts{}
	}
	for region, c := range src {
		dst[region] = dst[region].add(c)
	}
	return dst
}

func startRegionalStacks(ctx context.Context, cfg *Config, w *workload.Workload) ([]*regionalStack, error) {
	var stacks []*regionalStack
	for _, mode := range cfg.Policies {
		st, err := startRegionalStack(ctx, cfg, w, mode)
		if err != nil {
			return stacks, fmt.Errorf("bench: start %s: %w", mode, err)
		}
		stacks = append(stacks, st)
	}
	return stacks, nil
}

func closeRegionalStacks(stacks []*regionalStack, logger *slog.Logger) {
	for _, st := range stacks {
		if err := st.close(); err != nil {
			logger.Warn("stop stack", "mode", st.mode, "err", err)
		}
	}
}

// scrapeMetrics reads addr's /metrics; nil when it cannot be read or parsed (the figures from
// it are then missing).
func scrapeMetrics(addr string) map[string]*dto.MetricFamily {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	return mfs
}

// byLabel sums a counter family's values by the value of label; nil without metrics.
func byLabel(mfs map[string]*dto.MetricFamily, family, label string) ChoiceCounts {
	if mfs == nil {
		return nil
	}
	out := ChoiceCounts{}
	for _, m := range mfs[family].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// histogramBuckets returns a histogram family as cumulative counts by upper bound ("le", "+Inf"
// the total), summed over its series.
func histogramBuckets(mfs map[string]*dto.MetricFamily, family string) ChoiceCounts {
	return histogramBucketsBy(mfs, family, "")[""]
}

// histogramBucketsBy is histogramBuckets per value of label ("": every series in one).
func histogramBucketsBy(mfs map[string]*dto.MetricFamily, family, label string) map[string]ChoiceCounts {
	byValue := map[string]ChoiceCounts{}
	if label == "" {
		byValue[""] = ChoiceCounts{}
	}
	for _, m := range mfs[family].GetMetric() {
		value := ""
		for _, lp := range m.GetLabel() {
			if label != "" && lp.GetName() == label {
				value = lp.GetValue()
			}
		}
		out := byValue[value]
		if out == nil {
			out = ChoiceCounts{}
			byValue[value] = out
		}
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue // the parser keeps the +Inf line as a bucket; it is the sample count
			}
			out[strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] += float64(b.GetCumulativeCount())
		}
		out["+Inf"] += float64(h.GetSampleCount())
	}
	return byValue
}

// deciles renders a ratio histogram's P10 / P50 / P90 (false when it has no sample).
func deciles(buckets ChoiceCounts) (string, bool) {
	p10, ok := ratioQuantile(buckets, 0.1)
	p50, _ := ratioQuantile(buckets, 0.5)
	p90, _ := ratioQuantile(buckets, 0.9)
	return fmt.Sprintf("%.2f / %.2f / %.2f", p10, p50, p90), ok
}

// regionalMarkdown renders a Tier 2 run's figures table.
func regionalMarkdown(b *strings.Builder, sc Scenario, r *report.Report, rf *RegionalFigures) {
	fmt.Fprintf(b, "Burst region: %s. TTFT of its clients (ms), then where requests went.\n\n", rf.BurstRegion)
	b.WriteString(
		"| mode | burst TTFT P50 | P95 | P99 | P99 / local-only | all P99 | errors | burst requests answered elsewhere | by cluster | overflow answered by best / near-best / other | steady regions leaving | between bursts |\n",
	)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|\n")
	base := rf.Mode(RegionalBaseline)
	for i, m := range rf.Modes {
		t := r.Targets[i]
		ratio := "—"
		if base != nil {
			ratio = fmt.Sprintf("%.3f", float64(m.BurstTTFTMs.P99)/float64(base.BurstTTFTMs.P99))
		}
		fmt.Fprintf(
			b,
			"| %s | %s | %s | %s | %s | %s | %d | %d of %d (%.1f%%) | %s | %.0f / %.0f / %.0f | %d of %d (%.2f%%) | %d of %d (%.2f%%) |\n",
			m.Mode,
			m.BurstTTFTMs.P50,
			m.BurstTTFTMs.P95,
			m.BurstTTFTMs.P99,
			ratio,
			t.TTFTMs.P99,
			t.Errors,
			m.BurstLeft,
			m.BurstRequests,
			100*share(m.BurstLeft, m.BurstRequests),
			intCounts(m.LeftByCluster),
			m.OverflowAnswered["best"],
			m.OverflowAnswered["near_best"],
			m.OverflowAnswered["other"],
			m.SteadyLeft,
			m.SteadyRequests,
			100*m.SteadyLeftShare(),
			m.QuietLeft,
			m.QuietRequests,
			100*m.QuietLeftShare(),
		)
	}
	if o := rf.Oracle; o != nil {
		ratio := "—"
		if base != nil {
			ratio = fmt.Sprintf("%.3f", float64(o.BurstTTFTMs.P99)/float64(base.BurstTTFTMs.P99))
		}
		fmt.Fprintf(
			b,
			"| oracle (simulated) | %s | %s | %s | %s | — | — | %d of %d (%.1f%%) | — | — | %d of %d (%.2f%%) | — |\n",
			o.BurstTTFTMs.P50,
			o.BurstTTFTMs.P95,
			o.BurstTTFTMs.P99,
			ratio,
			o.BurstLeft,
			o.BurstRequests,
			100*share(o.BurstLeft, o.BurstRequests),
			o.SteadyLeft,
			o.SteadyRequests,
			100*share(o.SteadyLeft, o.SteadyRequests),
		)
		if g := rf.Mode("global"); g != nil {
			fmt.Fprintf(
				b,
				"\nBurst-region P99, global / oracle: %.3f. The oracle replays the same requests offline in the simulator, "+
					"each on the pod anywhere whose first token reaches the client soonest, given every pod's exact state; "+
					"its times are simulated ones scaled to real time.\n",
				float64(g.BurstTTFTMs.P99)/float64(o.BurstTTFTMs.P99),
			)
		}
	}
	var quick []string
	for _, m := range rf.Modes {
		if q := m.Quickest; q.Compared > 0 {
			late := ""
			if off := q.Compared - q.OnQuickest; off > 0 {
				late = fmt.Sprintf(", the others %.0f ms later on average; of them %d kept at home while elsewhere was quicker, "+
					"%d sent away while home was, %d sent to another cluster elsewhere", q.RegretMs/float64(off), q.KeptHome, q.SentAway, q.AwayElsewhere)
			}
			quick = append(
				quick,
				fmt.Sprintf("%s %d of %d (%.1f%%%s)", m.Mode, q.OnQuickest, q.Compared, 100*share(q.OnQuickest, q.Compared), late),
			)
		}
	}
	if len(quick) > 0 {
		fmt.Fprintf(
			b,
			"\nBurst-region requests answered by the quickest cluster at the moment they were sent, judged in the simulator "+
				"(the run replayed with the mode's placements, each request also simulated on every cluster's best pod; within %v of the quickest): %s.\n",
			quickestTolerance,
			strings.Join(quick, "; "),
		)
	}
	var choice []string
	for _, m := range rf.Modes {
		if m.Quickest.ChoiceP99Ms > 0 {
			choice = append(choice, fmt.Sprintf("%s %s ms (measured %s ms)", m.Mode, m.Quickest.ChoiceP99Ms, m.BurstTTFTMs.P99))
		}
	}
	if len(choice) > 0 {
		fmt.Fprintf(
			b,
			"\nBurst-region P99 with the mode's choices of cluster replayed in the simulator, each request on the pod of its "+
				"cluster with the earliest first token: %s. Near the measured P99, the gap to the oracle is in the choice of cluster; "+
				"well under it, in the gateways' choice of pod or the measurement.\n",
			strings.Join(choice, "; "),
		)
	}
	var calib, est []string
	for _, m := range rf.Modes {
		if q, ok := deciles(m.PredictionRatio); ok {
			calib = append(calib, m.Mode+" "+q)
		}
		for _, route := range []string{"local", "overflow", "retry"} {
			if q, ok := deciles(m.EstimateRatio[route]); ok {
				est = append(est, fmt.Sprintf("%s %s %s (%.0f)", m.Mode, route, q, m.EstimateRatio[route]["+Inf"]))
			}
		}
	}
	if len(calib) > 0 {
		fmt.Fprintf(
			b,
			"\nGateways' TTFT predictions, measured / predicted at P10 / P50 / P90 (switchyard_gateway_ttft_prediction_ratio, "+
				"all clusters, interpolated within its buckets): %s.\n",
			strings.Join(calib, "; "),
		)
	}
	if len(est) > 0 {
		fmt.Fprintf(
			b,
			"\nRouters' TTFT estimates, measured / estimated at P10 / P50 / P90 by route (switchyard_router_ttft_estimate_ratio, "+
				"all routers, interpolated within its buckets; in brackets the streams counted): %s.\n",
			strings.Join(est, "; "),
		)
	}
	if g := rf.Mode("global"); g != nil && len(g.Attempts) > 0 {
		regions := slices.Sorted(maps.Keys(g.Attempts))
		parts := make([]string, len(regions))
		for i, r := range regions {
			parts[i] = fmt.Sprintf("%s: %s", r, counts(g.Attempts[r]))
		}
		fmt.Fprintf(
			b,
			"\nGlobal routers' forward attempts by result (handed_back: a home gateway gave back a request it predicted later than the router's offer): %s.\n",
			strings.Join(parts, "; "),
		)
	}
	fmt.Fprintf(b, "\nRegions: %s; round trips: %s.\n", regionsLine(sc), linksLine(sc))
}

func intCounts(m map[string]int) string {
	f := make(map[string]float64, len(m))
	for k, v := range m {
		f[k] = float64(v)
	}
	return counts(f)
}

func regionsLine(sc Scenario) string {
	var parts []string
	for _, r := range sc.Regions {
		for _, c := range r.Clusters {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", r.Name, c.Name, pools(Scenario{Pools: c.Pools})))
		}
	}
	return strings.Join(parts, ", ")
}

func linksLine(sc Scenario) string {
	parts := make([]string, len(sc.Links))
	for i, l := range sc.Links {
		parts[i] = fmt.Sprintf("%s–%s %v", l.A, l.B, l.RTT)
	}
	return strings.Join(parts, ", ")
}

// regionalBaseline is the report's baseline for a run of modes: RegionalBaseline when it is one of
// them, else none (a run of `--policies=global` alone has no ratios).
func regionalBaseline(modes []string) string {
	if slices.Contains(modes, RegionalBaseline) {
		return RegionalBaseline
	}
	return ""
}
