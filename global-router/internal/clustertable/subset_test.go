package clustertable_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
	"github.com/switchyard-dev/switchyard/gossip/sketch"
)

// routeFixture is a table over n random clusters in three regions, with this router's own state
// of some of them: requests in flight and waiting, measured round trips, ejections, drains, stale
// and old summaries.
type routeFixture struct {
	tb     *clustertable.Table
	clk    *clock
	names  []string
	hashes []uint64
	rng    *rand.Rand
}

func newRouteFixture(t *testing.T, n int, seed uint64, topK int) *routeFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	prompt := []byte(fmt.Sprintf("%01600d", seed))
	f := &routeFixture{clk: &clock{t: time.Unix(1000, 0)}, hashes: prefix.Hashes(nil, "llama", prompt, 0), rng: rng}
	regions := []string{"r0", "r1", "r2"}
	var src source
	dr := drains{}
	for i := range n {
		b, err := sketch.NewForCapacity(256, 0.01, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(2) == 0 {
			for _, h := range f.hashes[:rng.IntN(len(f.hashes)+1)] {
				b.Add(h)
			}
		}
		m := model("llama", uint32(1+rng.IntN(8)))
		m.QueueDepth = uint32(rng.IntN(3) * rng.IntN(2))
		m.PredictedTtftMs = float32(20 + rng.IntN(400))
		m.MeanPredictedTtftMs = m.PredictedTtftMs * (1 + rng.Float32())
		m.FreeKvTokens = uint64(rng.IntN(400_001))
		m.Saturation = float32(rng.IntN(3)) / 4
		m.PrefillTokensPerSecond = float32(5_000 + rng.IntN(40_000))
		if rng.IntN(3) > 0 {
			m.PrefixSketch = b.Proto()
		}
		if rng.IntN(20) == 0 {
			m.ReadyPods = 0
		}
		name := fmt.Sprintf("c%04d", i)
		s := summary(name, regions[i%3], name+"-gw", "http://"+name, f.clk.t, rng.IntN(30) == 0, m)
		s.Age = time.Duration(rng.IntN(1500)) * time.Millisecond
		src = append(src, s)
		f.names = append(f.names, name)
		if rng.IntN(40) == 0 {
			dr[name] = true
		}
	}
	f.tb = clustertable.New(clustertable.Config{
		Region: "r0", Now: f.clk.now, Rand: func() float64 { return 0.5 }, TopK: topK,
		RTT: map[string]time.Duration{"r1": 40 * time.Millisecond, "r2": 90 * time.Millisecond},
	}, src, dr)
	// This router's own state of a few clusters.
	for range max(n/10, 2) {
		c := f.names[rng.IntN(n)]
		target := forward.Target{Cluster: c, PromptTokens: rng.IntN(3000)}
		switch rng.IntN(6) {
		case 0: // in flight
			f.tb.Dispatched(target)
		case 1: // accepted, streaming, waiting for a first token
			f.tb.Dispatched(target)
			f.tb.Observe(forward.Outcome{Target: target, Status: 200, Streamed: true,
				RTT: time.Duration(rng.IntN(120)) * time.Millisecond})
		case 2: // answered: sent since the summary, round trip measured
			f.tb.Dispatched(target)
			f.tb.Observe(forward.Outcome{Target: target, Status: 200, RTT: time.Duration(rng.IntN(120)) * time.Millisecond})
			f.tb.FirstToken(target)
		case 3: // unreachable: ejected
			f.tb.Dispatched(target)
			f.tb.Observe(forward.Outcome{Target: target, Err: errors.New("connection refused")})
		default: // measured a while ago: its round trip fades back to the prior
			f.tb.Dispatched(target)
			f.tb.Observe(forward.Outcome{Target: target, Status: 200, RTT: time.Duration(rng.IntN(150)) * time.Millisecond})
		}
		f.clk.t = f.clk.t.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
	}
	return f
}

// outcome is what of a decision reaches the request: compared by cluster name.
type outcome struct {
	err                string
	targets            []string
	route              routing.Route
	best, left         string
	nearBest, handBack time.Duration
	session            bool
}

func outcomeOf(view []clustertable.Entry, d routing.Decision, err error) outcome {
	o := outcome{route: d.Route, nearBest: d.NearBest, handBack: d.HandBack, session: d.Session,
		left: d.LeftBecause.String()}
	if err != nil {
		o.err = err.Error()
		return o
	}
	for _, i := range d.Targets {
		o.targets = append(o.targets, view[i].Cluster.Name)
	}
	if d.Best >= 0 {
		o.best = view[d.Best].Cluster.Name
	}
	return o
}

// full decides over every cluster, as View, Claim and routing.Decide do, and gives the turns back.
func (f *routeFixture) full(pol routing.Policy, req routing.Request, seed uint64) outcome {
	view := f.tb.View("llama", f.hashes)
	f.tb.Claim(view)
	cs := make([]routing.Cluster, len(view))
	for i := range view {
		cs[i] = view[i].Cluster
	}
	d, err := routing.Decide("r0", cs, pol, req, routing.DefaultOptions(), rand.New(rand.NewPCG(seed, 9)))
	f.tb.Release(view, -1)
	return outcomeOf(view, d, err)
}

func (f *routeFixture) route(pol routing.Policy, req routing.Request, seed uint64) outcome {
	view, d, err := f.tb.Route("llama", f.hashes, pol, req, routing.DefaultOptions(), rand.NewPCG(seed, 9))
	f.tb.Release(view, -1)
	return outcomeOf(view, d, err)
}

// trials runs Route against the decision over every cluster for a spread of policies and
// requests; it returns how many differed and how many there were.
func (f *routeFixture) trials(t *testing.T, report bool) (differ, total int) {
	t.Helper()
	pols := []routing.Policy{routing.DefaultPolicy(), {OverflowThreshold: 0.3}, {OverflowThreshold: 0},
		{OverflowThreshold: 0.8, AllowedRegions: []string{"r0", "r2"}}}
	for p, pol := range pols {
		for r := range 6 {
			req := routing.Request{PromptTokens: 400, AvgTokens: 600}
			switch r {
			case 1:
				req.PromptTokens, req.AvgTokens = 4000, 4200
			case 2:
				req.SessionCluster = f.names[f.rng.IntN(len(f.names))]
			case 3:
				req.TTFTSLO = time.Duration(50+f.rng.IntN(300)) * time.Millisecond
			case 4:
				req.TTFTSLO, req.SessionCluster = 120*time.Millisecond, f.names[0]
			}
			seed := uint64(p*10 + r)
			want := f.full(pol, req, seed)
			got := f.route(pol, req, seed)
			total++
			if !equalOutcome(got, want) {
				differ++
				if report {
					t.Errorf("policy %+v request %+v: Route decided %+v, every cluster %+v", pol, req, got, want)
				}
			}
			f.clk.t = f.clk.t.Add(time.Duration(f.rng.IntN(50)) * time.Millisecond)
		}
	}
	return differ, total
}

func equalOutcome(a, b outcome) bool {
	return a.err == b.err && slices.Equal(a.targets, b.targets) && a.route == b.route && a.best == b.best &&
		a.left == b.left && a.nearBest == b.nearBest && a.handBack == b.handBack && a.session == b.session
}

// Route decides as routing.Decide over every cluster does: the same chosen cluster, fallbacks,
// route, best and near-best estimates, hand-back offer, session choice and reason for leaving the
// region, over pools of every size and many random fleets and router states, and decides most
// requests over a subset (the reduced path is taken, not only the fallback).
func TestRouteDecidesAsEveryCluster(t *testing.T) {
	for _, n := range []int{3, 20, 200, 1000} {
		t.Run(fmt.Sprintf("clusters=%d", n), func(t *testing.T) {
			seeds := 20
			var reduced, total uint64
			for seed := range uint64(seeds) {
				f := newRouteFixture(t, n, seed, 0)
				f.trials(t, true)
				r, full := f.tb.DecisionPaths()
				reduced, total = reduced+r, total+r+full
			}
			t.Logf("%d of %d decisions over a subset", reduced, total)
			if n >= 200 && reduced*2 < total {
				t.Errorf("only %d of %d decisions over a subset", reduced, total)
			}
		})
	}
}

// With too small a subset (3 clusters per group: fewer than a decision's targets) and no check,
// decisions differ: the test above can tell.
func TestRouteSubsetTooSmallDiffers(t *testing.T) {
	differ, total := 0, 0
	for seed := range uint64(6) {
		f := newRouteFixture(t, 200, seed, 3)
		clustertable.SetCoversCheck(f.tb, false)
		d, k := f.trials(t, false)
		differ, total = differ+d, total+k
	}
	if differ == 0 {
		t.Fatalf("a subset of 3 clusters per group, unchecked, decided all %d requests as every cluster", total)
	}
	t.Logf("%d of %d decisions differ with 3 clusters per group and no check", differ, total)
}
