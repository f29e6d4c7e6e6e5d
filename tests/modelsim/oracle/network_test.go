package oracle_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// twoRegions marks every request as sent from "home", pod 0 in home, pod 1 "away" at rtt.
func twoRegions(
	reqs []workload.Request,
	rtt time.Duration,
	localOnly bool,
) func(*workload.Request, int) (time.Duration, bool) {
	for i := range reqs {
		reqs[i].Region = "home"
	}
	return func(r *workload.Request, pod int) (time.Duration, bool) {
		if pod == 0 {
			return 0, true
		}
		return rtt, !localOnly
	}
}

func TestNetworkRoundTripsAndReach(t *testing.T) {
	t.Parallel() // a pure simulation (seconds of CPU, no shared state): runs beside the others
	// Twice one h100's capacity from one region: the oracle must send part of it to the other
	// region's pod and count that pod's round trip in those requests' times; kept local it may
	// not, and its tail is far longer.
	w, reqs := smallMixed(t, 30, 10*time.Second)
	cfg := oracle.DefaultConfig()
	cfg.Profiles = []string{"h100", "h100"}
	const rtt = 40 * time.Millisecond

	run := func(localOnly bool) *oracle.Report {
		cfg := cfg
		cfg.Network = twoRegions(reqs, rtt, localOnly)
		rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	global, local := run(false), run(true)
	away := 0
	for _, r := range global.Requests {
		want := time.Duration(0)
		if r.Pod == 1 {
			want = rtt
			away++
		}
		if r.RTT != want || r.Region != "home" {
			t.Fatalf("request %d on pod %d: rtt %v region %q, want %v home", r.Index, r.Pod, r.RTT, r.Region, want)
		}
		if r.TTFT < r.RTT+3*time.Millisecond { // the round trip plus the API overhead at least
			t.Fatalf("request %d: TTFT %v does not include its round trip %v", r.Index, r.TTFT, r.RTT)
		}
	}
	if away == 0 || away == len(reqs) {
		t.Fatalf("%d of %d requests went to the other region; want some, not all", away, len(reqs))
	}
	for _, r := range local.Requests {
		if r.Pod != 0 || r.RTT != 0 {
			t.Fatalf("kept local, request %d went to pod %d (rtt %v)", r.Index, r.Pod, r.RTT)
		}
	}
	g, l := global.RegionSummary("home"), local.RegionSummary("home")
	if g.Requests != len(reqs) || l.Requests != len(reqs) {
		t.Fatalf("region summaries count %d and %d requests, want %d", g.Requests, l.Requests, len(reqs))
	}
	t.Logf("P99 spread %v, kept local %v; %d of %d sent away", g.TTFT.P99, l.TTFT.P99, away, len(reqs))
	if g.TTFT.P99*2 > l.TTFT.P99 {
		t.Errorf("spread over two regions the P99 is %v, kept local %v: want under half", g.TTFT.P99, l.TTFT.P99)
	}
	if s := global.RegionSummary("elsewhere"); s.Requests != 0 {
		t.Errorf("a region that sent nothing has %d requests", s.Requests)
	}
}

func TestNetworkFarRegionUnused(t *testing.T) {
	// Light load and a round trip longer than any local wait: nothing is worth sending away.
	w, reqs := smallMixed(t, 2, 5*time.Second)
	cfg := oracle.DefaultConfig()
	cfg.Profiles = []string{"h100", "h100"}
	cfg.Network = twoRegions(reqs, 5*time.Second, false)
	rep, err := oracle.Replay(context.Background(), cfg, w, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Summary(); s.Share[1] != 0 {
		t.Fatalf("%.2f of the requests crossed a 5 s round trip at light load", s.Share[1])
	}
}

func TestNetworkAssignedOutOfReach(t *testing.T) {
	w, reqs := smallMixed(t, 4, 2*time.Second)
	cfg := oracle.DefaultConfig()
	cfg.Profiles = []string{"h100", "h100"}
	cfg.Network = twoRegions(reqs, time.Millisecond, true)
	cfg.Assign = func(int) int { return 1 }
	if _, err := oracle.Replay(context.Background(), cfg, w, reqs); err == nil {
		t.Fatal("a fixed assignment to a pod out of the request's reach was accepted")
	}
}
