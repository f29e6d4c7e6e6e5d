package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// quickestFigures judges placements against the simulator: the oracle's own placements are the
// quickest at every decision (no regret), keeping every request in its region is not during the
// bursts, failed requests are left out, and addresses that do not cover the fleet are an error.
func TestQuickestFigures(t *testing.T) {
	sc, w := shortRegionBurst(t)
	reqs, err := workload.Generate(w, w.Seed)
	if err != nil {
		t.Fatal(err)
	}
	// Pod addresses in the scenario's order, and each pod's region.
	fp := scenarioPods(sc)
	addrs := make([][]string, fp.cluster[len(fp.cluster)-1]+1)
	var flat []string
	regionOf := fp.region
	for _, k := range fp.cluster {
		a := fmt.Sprintf("10.0.%d.%d:8000", k, len(addrs[k]))
		addrs[k] = append(addrs[k], a)
		flat = append(flat, a)
	}
	samplesOf := func(pod func(i int) int) []loadgen.Sample {
		out := make([]loadgen.Sample, len(reqs))
		for i, r := range reqs {
			out[i] = loadgen.Sample{Index: r.Index, Region: r.Region, Status: 200, Endpoint: flat[pod(i)]}
		}
		return out
	}
	judge := func(samples []loadgen.Sample, addrs [][]string) (QuickestFigures, error) {
		return quickestFigures(context.Background(), sc, w, reqs, samples, addrs, "us-east-1", 2)
	}

	// The oracle's own placements.
	cfg := oracle.DefaultConfig()
	cfg.Profiles = fp.profiles
	cfg.Network = oracle.Regions{PodRegion: regionOf, RTT: sc.RTT}.Network(false)
	rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	best, err := judge(samplesOf(func(i int) int { return rep.Requests[i].Pod }), addrs)
	if err != nil {
		t.Fatal(err)
	}
	if best.Compared == 0 || best.OnQuickest != best.Compared || best.RegretMs != 0 {
		t.Fatalf("the oracle's own placements: %+v, want every one on the quickest", best)
	}
	// Replaying the oracle's choices of cluster, each request on its cluster's earliest pod, is
	// the oracle again (one cluster per region here, so the same pods): its P99 exactly.
	var burstTTFT []time.Duration
	for _, r := range rep.Requests {
		if r.Region == "us-east-1" {
			burstTTFT = append(burstTTFT, 2*r.TTFT)
		}
	}
	slices.Sort(burstTTFT)
	if want := report.Num(
		float64(oracle.NearestRank(burstTTFT, 0.99)) / float64(time.Millisecond),
	); best.ChoiceP99Ms != want ||
		want <= 0 {
		t.Fatalf("the oracle's choices of cluster replayed: P99 %v ms, want the oracle's %v", best.ChoiceP99Ms, want)
	}

	// Everything kept in its region, round robin over its pods.
	home := func(i int) int {
		var pods []int
		for p, r := range regionOf {
			if r == reqs[i].Region {
				pods = append(pods, p)
			}
		}
		return pods[i%len(pods)]
	}
	local, err := judge(samplesOf(home), addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("oracle: %d of %d on the quickest, choices replayed P99 %v ms; all at home: %d of %d, %v ms",
		best.OnQuickest, best.Compared, best.ChoiceP99Ms, local.OnQuickest, local.Compared, local.ChoiceP99Ms)
	if local.Compared != best.Compared || local.OnQuickest*10 > local.Compared*9 || local.RegretMs <= 0 {
		t.Fatalf("all at home: %+v, want fewer than 90%% on the quickest, with regret", local)
	}
	// One cluster a region: every request kept at home off the quickest had it elsewhere.
	if local.KeptHome != local.Compared-local.OnQuickest || local.SentAway != 0 || local.AwayElsewhere != 0 {
		t.Fatalf("all at home: %+v, want every miss kept at home", local)
	}
	// Kept at home, the burst queues there whatever the pod: a tail well past the oracle's.
	if local.ChoiceP99Ms < 2*best.ChoiceP99Ms {
		t.Fatalf(
			"all at home: choices of cluster replayed P99 %v ms, want at least twice the oracle's %v",
			local.ChoiceP99Ms,
			best.ChoiceP99Ms,
		)
	}
	// Pooling two runs pools their replayed requests: the same runs twice, the same P99.
	pooled := local
	pooled.choice = slices.Clone(local.choice)
	pooled.add(local)
	if pooled.ChoiceP99Ms != local.ChoiceP99Ms || len(pooled.choice) != 2*len(local.choice) {
		t.Fatalf(
			"pooled twice: P99 %v over %d, want %v over %d",
			pooled.ChoiceP99Ms,
			len(pooled.choice),
			local.ChoiceP99Ms,
			2*len(local.choice),
		)
	}
	pooled.add(best)
	if pooled.ChoiceP99Ms >= local.ChoiceP99Ms || pooled.ChoiceP99Ms <= best.ChoiceP99Ms {
		t.Fatalf(
			"pooled with the oracle's: P99 %v, want between %v and %v",
			pooled.ChoiceP99Ms,
			best.ChoiceP99Ms,
			local.ChoiceP99Ms,
		)
	}
	// Everything from the burst region sent to the farthest region: the misses are away, those
	// whose quickest was at home sent away, the others to the wrong cluster elsewhere.
	far := func(i int) int {
		if reqs[i].Region != "us-east-1" {
			return home(i)
		}
		for p, r := range regionOf {
			if r == "eu-west-1" {
				return p
			}
		}
		return -1
	}
	away, err := judge(samplesOf(far), addrs)
	if err != nil {
		t.Fatal(err)
	}
	if off := away.Compared - away.OnQuickest; away.KeptHome != 0 || away.SentAway == 0 ||
		away.SentAway+away.AwayElsewhere != off {
		t.Fatalf("all sent to eu-west-1: %+v, want every miss away, some with home quickest", away)
	}

	// Failed requests and requests naming no known pod are left out.
	s := samplesOf(home)
	failed := 0
	for i := range s {
		if s[i].Region == "us-east-1" && failed < 5 {
			s[i].Error, s[i].Status = loadgen.ErrHTTP5xx, 503
			failed++
		}
	}
	s[len(s)-1].Endpoint = "192.0.2.1:1"
	less, err := judge(s, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if want := local.Compared - failed; less.Compared != want && less.Compared != want-1 {
		t.Fatalf("with %d failures: %d compared, want %d (or one fewer)", failed, less.Compared, want)
	}

	if _, err := judge(samplesOf(home), addrs[:1]); err == nil || !strings.Contains(err.Error(), "addresses") {
		t.Fatalf("too few clusters' addresses: %v", err)
	}

	var b strings.Builder
	rf := &RegionalFigures{BurstRegion: "us-east-1", Modes: []ModeFigures{{Mode: "global", Quickest: local}}}
	regionalMarkdown(&b, sc, &report.Report{Targets: make([]report.Target, 1)}, rf)
	if !strings.Contains(b.String(), fmt.Sprintf("global %d of %d", local.OnQuickest, local.Compared)) {
		t.Fatalf("markdown lacks the quickest-cluster figure:\n%s", b.String())
	}
	if !strings.Contains(b.String(), fmt.Sprintf("global %s ms (measured", local.ChoiceP99Ms)) {
		t.Fatalf("markdown lacks the replayed choices' P99:\n%s", b.String())
	}
}
