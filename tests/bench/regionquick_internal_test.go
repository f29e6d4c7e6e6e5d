package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
	t.Logf("oracle %+v; all at home %+v", best, local)
	if local.Compared != best.Compared || local.OnQuickest*10 > local.Compared*9 || local.RegretMs <= 0 {
		t.Fatalf("all at home: %+v, want fewer than 90%% on the quickest, with regret", local)
	}
	// One cluster a region: every request kept at home off the quickest had it elsewhere.
	if local.KeptHome != local.Compared-local.OnQuickest || local.SentAway != 0 || local.AwayElsewhere != 0 {
		t.Fatalf("all at home: %+v, want every miss kept at home", local)
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
	if off := away.Compared - away.OnQuickest; away.KeptHome != 0 || away.SentAway == 0 || away.SentAway+away.AwayElsewhere != off {
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
}
