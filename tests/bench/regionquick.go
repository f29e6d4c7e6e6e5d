package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/switchyard-dev/switchyard/tests/loadgen"
	"github.com/switchyard-dev/switchyard/tests/loadgen/report"
	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
	"github.com/switchyard-dev/switchyard/tests/modelsim/oracle"
)

// quickestTolerance is how much later (real time) than the quickest cluster's first token an
// answering cluster's may come and still count as the quickest: below it, two clusters are a tie.
const quickestTolerance = 20 * time.Millisecond

// QuickestFigures say how often a mode's placements were the quickest available when they were
// made, judged in the simulator: the run's requests replayed on the scenario's pods with every
// placement the mode made, and each request also simulated, at the moment it is placed, on every
// pod (the oracle's view of that moment: exact pod states, the request joining a pod's queue on
// arrival, the round trip added). A request counts for the cluster that answered it through that
// cluster's best pod, so the figure judges the choice of cluster, not the gateway's choice of pod.
// Unlike the overflow-on-best figure, which checks decisions against the router's own estimates,
// this checks them against what the clusters would have done.
type QuickestFigures struct {
	// Compared counts the burst region's answered requests judged; OnQuickest those whose
	// answering cluster's best pod would have given the first token within quickestTolerance of
	// the quickest cluster's.
	Compared   int `json:"compared"`
	OnQuickest int `json:"on_quickest"`
	// RegretMs sums, over the others, how much later (real milliseconds) the answering cluster's
	// best pod would have given the first token than the quickest cluster's.
	RegretMs float64 `json:"regret_ms"`
	// The others by where the quickest cluster was: KeptHome were answered in the burst region
	// while a cluster elsewhere was quicker, SentAway elsewhere while a cluster at home was, and
	// AwayElsewhere elsewhere while another cluster elsewhere was. The rest were answered at home
	// while another cluster at home was quicker (a burst region of several clusters).
	KeptHome      int `json:"kept_home"`
	SentAway      int `json:"sent_away"`
	AwayElsewhere int `json:"away_elsewhere"`
	// ChoiceP99Ms is the burst region's P99 TTFT (real ms) with the mode's choices of cluster
	// replayed in the simulator and each request on the pod of its cluster that gives it the
	// earliest first token (the oracle's choice, inside that cluster): what the routers' choices
	// of cluster are worth with the gateways' choices of pod, and the measurement's own noise,
	// taken out. Beside the measured P99 it says whether a gap to the oracle is in the choice of
	// cluster (the two close) or below it. 0 when not replayed.
	ChoiceP99Ms report.Num `json:"cluster_choice_p99_ms"`

	// choice holds the replayed TTFTs behind ChoiceP99Ms (real time, ascending), for pooling runs.
	choice []time.Duration
}

// add adds src's counts to q, and its replayed TTFTs, then sets ChoiceP99Ms over them all.
func (q *QuickestFigures) add(src QuickestFigures) {
	q.Compared += src.Compared
	q.OnQuickest += src.OnQuickest
	q.RegretMs += src.RegretMs
	q.KeptHome += src.KeptHome
	q.SentAway += src.SentAway
	q.AwayElsewhere += src.AwayElsewhere
	if len(src.choice) > 0 {
		q.choice = append(q.choice, src.choice...)
		q.setChoice()
	}
}

// setChoice sorts q.choice and sets ChoiceP99Ms from it.
func (q *QuickestFigures) setChoice() {
	slices.Sort(q.choice)
	q.ChoiceP99Ms = report.Num(float64(oracle.NearestRank(q.choice, 0.99)) / float64(time.Millisecond))
}

// quickestFigures judges one mode's placements in one run (samples, ordered by request index)
// for the burst region's clients. sim is the run's workload in simulated time and reqs its
// sequence; clusterAddrs holds each cluster's pod addresses, in the scenario's cluster and pool
// order.
func quickestFigures(
	ctx context.Context,
	sc Scenario,
	sim *workload.Workload,
	reqs []workload.Request,
	samples []loadgen.Sample,
	clusterAddrs [][]string,
	burst string,
	timeScale float64,
) (QuickestFigures, error) {
	var q QuickestFigures
	fp := scenarioPods(sc)
	podOf := map[string]int{}   // pod address -> pod
	firstOf := map[string]int{} // region -> its first pod
	next := map[int]int{}       // cluster -> its pods seen so far
	for p, k := range fp.cluster {
		if _, ok := firstOf[fp.region[p]]; !ok {
			firstOf[fp.region[p]] = p
		}
		if k >= len(clusterAddrs) || next[k] >= len(clusterAddrs[k]) {
			return q, fmt.Errorf("bench: the clusters' pod addresses do not cover the scenario's %d pods", len(fp.cluster))
		}
		podOf[clusterAddrs[k][next[k]]] = p
		next[k]++
	}
	answered := map[int]int{} // request index -> the pod that answered it
	for _, s := range samples {
		if p, ok := podOf[s.Endpoint]; ok && s.OK() {
			answered[s.Index] = p
		}
	}
	cfg := oracle.DefaultConfig()
	cfg.Profiles, cfg.Compare = fp.profiles, true
	cfg.Network = oracle.Regions{RTT: sc.RTT, PodRegion: fp.region}.Network(false)
	cfg.Assign = func(i int) int { // a request that failed, or named no pod, stays in its region
		if p, ok := answered[reqs[i].Index]; ok {
			return p
		}
		return firstOf[reqs[i].Region]
	}
	rep, err := oracle.Replay(ctx, cfg, sim, reqs)
	if err != nil {
		return q, fmt.Errorf("bench: replaying the placements: %w", err)
	}
	tol := time.Duration(float64(quickestTolerance) / timeScale)
	for _, r := range rep.Requests {
		if _, ok := answered[r.Index]; !ok || r.Region != burst {
			continue
		}
		quickest, mine, at := time.Duration(-1), time.Duration(-1), -1
		for p, ft := range r.Candidates {
			if ft < 0 {
				continue
			}
			if quickest < 0 || ft < quickest {
				quickest, at = ft, p
			}
			if fp.cluster[p] == fp.cluster[r.Pod] && (mine < 0 || ft < mine) {
				mine = ft
			}
		}
		q.Compared++
		if mine <= quickest+tol {
			q.OnQuickest++
			continue
		}
		q.RegretMs += float64(mine-quickest) * timeScale / float64(time.Millisecond)
		switch home, quickHome := fp.region[r.Pod] == burst, fp.region[at] == burst; {
		case home && !quickHome:
			q.KeptHome++
		case !home && quickHome:
			q.SentAway++
		case !home:
			q.AwayElsewhere++
		}
	}
	if q.choice, err = choiceTTFTs(ctx, sc, fp, sim, reqs, answered, burst, timeScale); err != nil {
		return q, err
	}
	q.setChoice()
	return q, nil
}

// choiceTTFTs replays reqs with each answered request on the cluster of the pod that answered
// it, on the pod of that cluster the oracle would choose (the earliest first token); a request
// with no answer may go to any pod of its region. It returns the burst region's answered
// requests' TTFTs, in real time.
func choiceTTFTs(ctx context.Context, sc Scenario, fp fleetPods, sim *workload.Workload, reqs []workload.Request,
	answered map[int]int, burst string, timeScale float64) ([]time.Duration, error) {
	cfg := oracle.DefaultConfig()
	cfg.Profiles = fp.profiles
	anywhere := oracle.Regions{RTT: sc.RTT, PodRegion: fp.region}.Network(false)
	cfg.Network = func(r *workload.Request, pod int) (time.Duration, bool) {
		p, ok := answered[r.Index]
		if (ok && fp.cluster[pod] != fp.cluster[p]) || (!ok && fp.region[pod] != r.Region) {
			return 0, false
		}
		return anywhere(r, pod)
	}
	rep, err := oracle.Replay(ctx, cfg, sim, reqs)
	if err != nil {
		return nil, fmt.Errorf("bench: replaying the choices of cluster: %w", err)
	}
	var out []time.Duration
	for _, r := range rep.Requests {
		if _, ok := answered[r.Index]; ok && r.Region == burst {
			out = append(out, time.Duration(float64(r.TTFT)*timeScale))
		}
	}
	return out, nil
}
