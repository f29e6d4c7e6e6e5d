package routing_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

const ms = time.Millisecond

// cluster returns a healthy cluster serving the model with the given utilization (KV) and RTT.
func cluster(name, region string, kvUsed float64, rtt time.Duration) routing.Cluster {
	return routing.Cluster{
		Name: name, Region: region, Serves: true, RTT: rtt, ReadyPods: 4,
		TotalKVTokens: 1_000_000, FreeKVTokens: int64((1 - kvUsed) * 1_000_000),
		BaseTTFT: 20 * ms, PrefillTokensPerSec: 20_000, ServiceTime: time.Second,
	}
}

// busy marks a cluster whose gateway predicts a long wait (its queue is building).
func busy(c routing.Cluster, wait time.Duration) routing.Cluster {
	c.BaseTTFT = wait
	c.Queue = 12
	return c
}

func names(cs []routing.Cluster, idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = cs[j].Name
	}
	return out
}

func TestDecide(t *testing.T) {
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200}
	tests := []struct {
		name      string
		clusters  func() []routing.Cluster
		policy    routing.Policy
		localOnly bool
		wantErr   error
		wantFirst string
		wantRoute routing.Route
		reasonOf  map[string]contract.Reason // cluster -> expected reason
	}{
		{
			name: "local first while under threshold",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{cluster("east-a", "us-east-1", 0.5, 2*ms), cluster("west", "us-west-2", 0.0, 70*ms)}
			},
			policy: routing.DefaultPolicy(), wantFirst: "east-a", wantRoute: routing.RouteLocal,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonLocalHasRoom},
		},
		{
			name: "overflow to the best remote when local is over threshold",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{
					busy(cluster("east-a", "us-east-1", 0.9, 2*ms), 500*ms),
					cluster("west", "us-west-2", 0.1, 70*ms),
					cluster("eu", "eu-west-1", 0.1, 400*ms),
				}
			},
			policy: routing.DefaultPolicy(), wantFirst: "west", wantRoute: routing.RouteOverflow,
			reasonOf: map[string]contract.Reason{"eu": contract.ReasonNotNearBest},
		},
		{
			name: "residency fails closed",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{cluster("east-a", "us-east-1", 0.1, 2*ms)}
			},
			policy:   routing.Policy{OverflowThreshold: 0.8, AllowedRegions: []string{"eu-west-1"}},
			wantErr:  routing.ErrNotAllowed,
			reasonOf: map[string]contract.Reason{"east-a": contract.ReasonRegionNotAllowed},
		},
		{
			name: "residency keeps overflow inside allowed regions",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{
					busy(cluster("east-a", "us-east-1", 0.95, 2*ms), 500*ms),
					cluster("west", "us-west-2", 0.0, 70*ms),
					cluster("eu", "eu-west-1", 0.5, 80*ms),
				}
			},
			policy:    routing.Policy{OverflowThreshold: 0.8, AllowedRegions: []string{"us-east-1", "eu-west-1"}},
			wantFirst: "eu", wantRoute: routing.RouteOverflow,
		},
		{
			name: "drained, stale and unhealthy clusters are skipped",
			clusters: func() []routing.Cluster {
				a, b, c := cluster(
					"a",
					"us-east-1",
					0,
					2*ms,
				), cluster(
					"b",
					"us-east-1",
					0,
					2*ms,
				), cluster(
					"c",
					"us-east-1",
					0,
					2*ms,
				)
				a.Drained, b.Stale, c.Unhealthy = true, true, true
				return []routing.Cluster{a, b, c, cluster("d", "us-west-2", 0.3, 70*ms)}
			},
			policy:    routing.DefaultPolicy(),
			wantFirst: "d",
			wantRoute: routing.RouteOverflow,
			reasonOf: map[string]contract.Reason{
				"a": contract.ReasonDrained,
				"b": contract.ReasonStale,
				"c": contract.ReasonUnhealthy,
			},
		},
		{
			name: "listed, but no ready pods anywhere for now: wait for room, not unknown",
			clusters: func() []routing.Cluster {
				c := cluster("a", "us-east-1", 0, 2*ms)
				c.Serves, c.Lists, c.ReadyPods = false, true, 0
				return []routing.Cluster{c}
			},
			policy: routing.DefaultPolicy(), wantErr: routing.ErrNoRoom,
			reasonOf: map[string]contract.Reason{"a": contract.ReasonNoReadyPods},
		},
		{
			name: "listed without ready pods only outside the allowed regions",
			clusters: func() []routing.Cluster {
				c := cluster("eu", "eu-west-1", 0, 80*ms)
				c.Serves, c.Lists, c.ReadyPods = false, true, 0
				return []routing.Cluster{c}
			},
			policy: routing.Policy{
				OverflowThreshold: 0.8,
				AllowedRegions:    []string{"us-east-1"},
			},
			wantErr: routing.ErrNotAllowed,
		},
		{
			name: "no cluster serves the model",
			clusters: func() []routing.Cluster {
				c := cluster("a", "us-east-1", 0, 2*ms)
				c.Serves = false
				return []routing.Cluster{c}
			},
			policy: routing.DefaultPolicy(), wantErr: routing.ErrNoCandidate,
		},
		{
			name: "all saturated means no room",
			clusters: func() []routing.Cluster {
				a := cluster("a", "us-east-1", 0.2, 2*ms)
				a.SaturatedFraction = 1
				return []routing.Cluster{a, cluster("b", "us-west-2", 1.0, 70*ms)}
			},
			policy: routing.DefaultPolicy(), wantErr: routing.ErrNoRoom,
			reasonOf: map[string]contract.Reason{"a": contract.ReasonSaturated, "b": contract.ReasonSaturated},
		},
		{
			name: "overflow cap excludes a capped region",
			clusters: func() []routing.Cluster {
				w := cluster("west", "us-west-2", 0.0, 70*ms)
				w.RegionOverflowInFlight = 10
				return []routing.Cluster{cluster("east", "us-east-1", 0.9, 2*ms), w, cluster("eu", "eu-west-1", 0.2, 80*ms)}
			},
			policy:    routing.Policy{OverflowThreshold: 0.8, OverflowCap: 10},
			wantFirst: "east", wantRoute: routing.RouteLocal, // eu's 80 ms RTT loses to the busy local cluster
			reasonOf: map[string]contract.Reason{"west": contract.ReasonOverflowCap},
		},
		{
			name: "prefix cache makes a remote cluster the best",
			clusters: func() []routing.Cluster {
				w := cluster("west", "us-west-2", 0.1, 70*ms)
				w.CachedPrefixTokens = 1000
				e := cluster("eu", "eu-west-1", 0.1, 70*ms)
				e.PrefillTokensPerSec = 2000 // slow GPUs: 500 ms of prefill
				return []routing.Cluster{busy(cluster("east", "us-east-1", 0.85, 2*ms), 150*ms), w, e}
			},
			policy: routing.DefaultPolicy(), wantFirst: "west", wantRoute: routing.RouteOverflow,
		},
		{
			name: "overflow when a remote cluster answers more than LocalPreference (3x) times as fast",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{
					busy(cluster("east-a", "us-east-1", 0.3, 2*ms), 400*ms),
					cluster("west", "us-west-2", 0.1, 70*ms),
				}
			},
			policy: routing.DefaultPolicy(), wantFirst: "west", wantRoute: routing.RouteOverflow,
			reasonOf: map[string]contract.Reason{"east-a": contract.ReasonNotNearBest}, // in the overflow pool, too slow
		},
		{
			name: "stay local when a remote cluster is less than LocalPreference times as fast",
			clusters: func() []routing.Cluster {
				// east 2 + 200 + 50 = 252 ms; west 70 + 20 + 50 = 140 ms.
				return []routing.Cluster{
					busy(cluster("east-a", "us-east-1", 0.3, 2*ms), 200*ms),
					cluster("west", "us-west-2", 0.1, 70*ms),
				}
			},
			policy: routing.DefaultPolicy(), wantFirst: "east-a", wantRoute: routing.RouteLocal,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonLocalHasRoom},
		},
		{
			name: "local-only keeps a busy region's traffic at home",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{
					busy(cluster("east-a", "us-east-1", 0.9, 2*ms), 500*ms),
					cluster("west", "us-west-2", 0.1, 70*ms),
				}
			},
			policy: routing.DefaultPolicy(), localOnly: true, wantFirst: "east-a", wantRoute: routing.RouteLocal,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonLocalOnly},
		},
		{
			name: "local-only with no local cluster serving has no room",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{cluster("west", "us-west-2", 0.1, 70*ms)}
			},
			policy: routing.DefaultPolicy(), localOnly: true, wantErr: routing.ErrNoRoom,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonLocalOnly},
		},
		{
			name: "local-only with a saturated local cluster has no room",
			clusters: func() []routing.Cluster {
				a := cluster("east-a", "us-east-1", 0.2, 2*ms)
				a.SaturatedFraction = 1
				return []routing.Cluster{a, cluster("west", "us-west-2", 0.1, 70*ms)}
			},
			policy: routing.DefaultPolicy(), localOnly: true, wantErr: routing.ErrNoRoom,
			reasonOf: map[string]contract.Reason{"east-a": contract.ReasonSaturated, "west": contract.ReasonLocalOnly},
		},
		{
			name: "local-only policy keeps a saturated region's traffic home",
			clusters: func() []routing.Cluster {
				a := cluster("east-a", "us-east-1", 0.95, 2*ms)
				a.SaturatedFraction = 1
				return []routing.Cluster{a, cluster("west", "us-west-2", 0.0, 70*ms)}
			},
			policy: routing.LocalOnlyPolicy("us-east-1"), wantErr: routing.ErrNoRoom,
			reasonOf: map[string]contract.Reason{"east-a": contract.ReasonSaturated, "west": contract.ReasonRegionNotAllowed},
		},
		{
			name: "local-only policy with no local cluster allows none",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{cluster("west", "us-west-2", 0.0, 70*ms)}
			},
			policy: routing.LocalOnlyPolicy("us-east-1"), wantErr: routing.ErrNotAllowed,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonRegionNotAllowed},
		},
		{
			name: "local-only policy routes locally over the threshold",
			clusters: func() []routing.Cluster {
				return []routing.Cluster{cluster("east-a", "us-east-1", 0.9, 2*ms), cluster("west", "us-west-2", 0.0, 70*ms)}
			},
			policy: routing.LocalOnlyPolicy("us-east-1"), wantFirst: "east-a", wantRoute: routing.RouteLocal,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonRegionNotAllowed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := tt.clusters()
			opt := routing.DefaultOptions()
			opt.LocalOnly = tt.localOnly
			d, err := routing.Decide("us-east-1", cs, tt.policy, req, opt, rand.New(rand.NewPCG(1, 2)))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(d.Explain) != len(cs) {
				t.Fatalf("explanations = %d, want %d", len(d.Explain), len(cs))
			}
			for _, e := range d.Explain {
				if want, ok := tt.reasonOf[e.Cluster]; ok && e.Reason != want {
					t.Errorf("%s: reason %q, want %q", e.Cluster, e.Reason, want)
				}
			}
			if tt.wantErr != nil {
				return
			}
			if got := cs[d.Targets[0]].Name; got != tt.wantFirst {
				t.Fatalf("first target = %s, want %s (targets %v, explain %+v)", got, tt.wantFirst, names(cs, d.Targets), d.Explain)
			}
			if d.Route != tt.wantRoute {
				t.Fatalf("route = %s, want %s", d.Route, tt.wantRoute)
			}
			if !d.Explain[d.Targets[0]].Chosen {
				t.Fatalf("chosen cluster not marked chosen in the explanation")
			}
		})
	}
}

// TestPowerOfDSpreadsAmongNearBest checks that overflow is spread among near-equal clusters but
// never lands on one outside the 20% window.
// A returning cluster whose summary makes it look slow (its gateway's prior speeds) still gets
// its share of the pool: one request in as many as the pool has clusters. Without the flag it gets
// nothing, and a cluster elsewhere is not part of a local pool's share.
func TestReturningClusterGetsItsShare(t *testing.T) {
	slow := cluster("back", "us-east-1", 0.1, 0)
	slow.PrefillTokensPerSec = 2_000 // 500 tokens: 250 ms of prefill against 25 ms
	cs := []routing.Cluster{
		cluster("a", "us-east-1", 0.1, 0),
		cluster("b", "us-east-1", 0.1, 0),
		slow,
		cluster("far", "eu-west-1", 0.1, 80*ms),
	}
	count := func(returning bool) int {
		cs[2].Returning = returning
		rng := rand.New(rand.NewPCG(3, 4))
		n := 0
		for range 3000 {
			d, err := routing.Decide(
				"us-east-1",
				cs,
				routing.DefaultPolicy(),
				routing.Request{PromptTokens: 500},
				routing.DefaultOptions(),
				rng,
			)
			if err != nil {
				t.Fatal(err)
			}
			if d.Targets[0] == 2 {
				n++
				if d.Explain[2].Reason != contract.ReasonChosenLocalReturning || d.Route != routing.RouteLocal {
					t.Fatalf("returning cluster chosen with reason %q, route %s", d.Explain[2].Reason, d.Route)
				}
			}
			if d.Targets[0] == 3 {
				t.Fatal("a local pool's request went elsewhere")
			}
		}
		return n
	}
	if n := count(false); n != 0 {
		t.Fatalf("the slow cluster got %d of 3000 requests without slow start, want none", n)
	}
	// One in three local clusters: 1,000 expected, the binomial's sd is 26.
	if n := count(true); n < 900 || n > 1100 {
		t.Fatalf("the returning cluster got %d of 3000 requests, want about 1000", n)
	}
}

func TestPowerOfDSpreadsAmongNearBest(t *testing.T) {
	cs := []routing.Cluster{
		busy(cluster("east", "us-east-1", 0.95, 2*ms), time.Second),
		cluster("w1", "us-west-2", 0.1, 70*ms),
		cluster("w2", "us-west-2", 0.1, 72*ms),
		cluster("w3", "us-west-2", 0.1, 74*ms),
		cluster("far", "eu-west-1", 0.1, 300*ms),
	}
	rng := rand.New(rand.NewPCG(7, 7))
	counts := map[string]int{}
	for range 3000 {
		d, err := routing.Decide(
			"us-east-1",
			cs,
			routing.DefaultPolicy(),
			routing.Request{PromptTokens: 500},
			routing.DefaultOptions(),
			rng,
		)
		if err != nil {
			t.Fatal(err)
		}
		counts[cs[d.Targets[0]].Name]++
		if d.Best != 1 || d.Explain[d.Targets[0]].Estimate > d.NearBest {
			t.Fatalf(
				"best = %d, chosen estimate %v over the near-best bound %v; want best 1 (w1) and chosen within",
				d.Best,
				d.Explain[d.Targets[0]].Estimate,
				d.NearBest,
			)
		}
	}
	if counts["far"] != 0 || counts["east"] != 0 {
		t.Fatalf("picked outside the near-best set: %v", counts)
	}
	// With d=2 distinct samples over three near-equal clusters the best wins 2/3 of draws (it is
	// one of the two samples), the second 1/3, the third never (never the lower of two).
	if share := float64(counts["w1"]) / 3000; share < 0.6 || share > 0.73 || counts["w2"] == 0 || counts["w3"] != 0 {
		t.Fatalf("unexpected spread %v", counts)
	}
}

// TestInFlightAvoidsHerding checks that the router's own in-flight requests since a summary move
// the choice away from a cluster that looked free.
func TestInFlightAvoidsHerding(t *testing.T) {
	a, b := cluster("a", "us-west-2", 0.1, 70*ms), cluster("b", "us-west-2", 0.1, 75*ms)
	cs := []routing.Cluster{busy(cluster("east", "us-east-1", 0.95, 2*ms), time.Second), a, b}
	opts := routing.Options{NearBest: 0, MaxChoices: 1, D: 1} // deterministic: always the best
	d, err := routing.Decide("us-east-1", cs, routing.DefaultPolicy(), routing.Request{PromptTokens: 100}, opts, nil)
	if err != nil || cs[d.Targets[0]].Name != "a" {
		t.Fatalf("first pick = %v (%v), want a", cs[d.Targets[0]].Name, err)
	}
	cs[1].InFlight = 8 // 8 more 100-token prompts at 20,000 tokens/s over 4 pods: +10 ms of expected wait
	d, err = routing.Decide("us-east-1", cs, routing.DefaultPolicy(), routing.Request{PromptTokens: 100}, opts, nil)
	if err != nil || cs[d.Targets[0]].Name != "b" {
		t.Fatalf("pick with in-flight = %v (%v), want b", cs[d.Targets[0]].Name, err)
	}
}

func TestEstimate(t *testing.T) {
	req := routing.Request{PromptTokens: 1000}
	tests := []struct {
		name   string
		modify func(c *routing.Cluster)
		want   time.Duration
	}{
		// 10 ms RTT + 20 ms base + (1000-400)/20000 s = 30 ms prefill.
		{"cached prefix skips prefill", func(c *routing.Cluster) { c.CachedPrefixTokens = 400 }, 60 * ms},
		// + 8 × 1000/20000 s / 4 pods = 100 ms for the router's requests since the summary.
		{"in-flight prompts to prefill", func(c *routing.Cluster) { c.InFlight = 8 }, 180 * ms},
		// + 8 × 1 s / 4 pods when new requests queue.
		{"in-flight on a saturated cluster", func(c *routing.Cluster) { c.InFlight, c.SaturatedFraction = 8, 1 }, 2080 * ms},
		// no prediction: 12 queued × 1 s / 4 pods.
		{"queue without a prediction", func(c *routing.Cluster) { c.BaseTTFT, c.Queue = 0, 12 }, 3060 * ms},
		// 8 of the router's requests wait for a first token: 8 × 50 ms / 4 pods = 100 ms of
		// backlog, more than the summary's 20 ms.
		{"waiting requests beyond the summary", func(c *routing.Cluster) { c.Waiting = 8 }, 160 * ms},
		// the summary already predicts more than the waiting requests' backlog: no double count.
		{"waiting requests within the summary", func(c *routing.Cluster) { c.Waiting, c.BaseTTFT = 2, 300*ms }, 360 * ms},
		// known lengths: 8 requests of 12,000 tokens in all at 20,000 tokens/s over 4 pods = 150 ms,
		// whatever this request's own length.
		{"in-flight prompts of known length", func(c *routing.Cluster) { c.InFlight, c.InFlightTokens = 8, 12000 }, 230 * ms},
		// 2 waiting requests of 16,000 tokens: 200 ms of backlog, more than their count suggests.
		{"waiting long prompts", func(c *routing.Cluster) { c.Waiting, c.WaitingTokens = 2, 16000 }, 260 * ms},
		// a saturated cluster counts service times, not tokens.
		{
			"known lengths on a saturated cluster",
			func(c *routing.Cluster) { c.InFlight, c.InFlightTokens, c.SaturatedFraction = 8, 12000, 1 },
			2080 * ms,
		},
		// Water-filling. The best pod waits 20 ms, the mean of the 4 is 80 ms: the other 3 wait
		// 100 ms, so the best pod takes 80 ms × 20,000 tokens/s = 1,600 tokens before they share.
		// One request of 1,000 tokens: all on the best pod, 50 ms more.
		{"one request fills the best pod", func(c *routing.Cluster) { c.InFlight, c.MeanTTFT = 1, 80*ms }, 130 * ms},
		// 8,000 tokens: 1,600 bring the best pod to 100 ms, the other 6,400 spread over 4 pods (80 ms).
		{"work past the others' level spreads", func(c *routing.Cluster) { c.InFlight, c.MeanTTFT = 8, 80*ms }, 240 * ms},
		// Half the pods saturated: the mean is over the 2 others, so the second waits 140 ms and
		// the best takes 2,400 tokens first; the rest, 5,600 over 4 pods, adds 70 ms.
		{
			"mean over the unsaturated pods",
			func(c *routing.Cluster) { c.InFlight, c.MeanTTFT, c.SaturatedFraction = 8, 80*ms, 0.5 },
			270 * ms,
		},
		// A mean at or below the best (or a single unsaturated pod) spreads evenly, as without one.
		{"mean below the best", func(c *routing.Cluster) { c.InFlight, c.MeanTTFT = 8, 10*ms }, 180 * ms},
		{
			"one unsaturated pod",
			func(c *routing.Cluster) { c.InFlight, c.MeanTTFT, c.SaturatedFraction = 8, 80*ms, 0.75 },
			180 * ms,
		},
		// No request since the summary: the mean changes nothing.
		{"mean without work in flight", func(c *routing.Cluster) { c.MeanTTFT = 80 * ms }, 80 * ms},
		// A summary 100 ms old predicted 300 ms: 200 ms of it are left.
		{
			"a summary's wait drains with its age",
			func(c *routing.Cluster) { c.BaseTTFT, c.SummaryAge = 300*ms, 100*ms },
			260 * ms,
		},
		// ... down to one engine step, however old.
		{
			"drained down to a step",
			func(c *routing.Cluster) { c.BaseTTFT, c.SummaryAge, c.StepTime = 300*ms, time.Second, 25*ms },
			85 * ms,
		},
		// A wait under a step is kept as it is.
		{"a wait under a step", func(c *routing.Cluster) { c.SummaryAge, c.StepTime = time.Second, 25*ms }, 80 * ms},
		// The work sent since the summary (100 ms, the oldest of it sent 50 ms ago) drains with
		// the rest: 20 + 100 - 50 ms.
		{
			"work sent since drains too",
			func(c *routing.Cluster) { c.InFlight, c.SummaryAge, c.InFlightAge = 8, 50*ms, 50*ms },
			130 * ms,
		},
		// ... but only since it was sent: a summary 300 ms old, the work sent 40 ms ago, 60 ms of
		// it left (not 20 + 100 - 300).
		{
			"work sent since drains from its sending",
			func(c *routing.Cluster) { c.InFlight, c.SummaryAge, c.InFlightAge = 8, 300*ms, 40*ms },
			120 * ms,
		},
		// Sent just now: all of it left.
		{"work sent just now", func(c *routing.Cluster) { c.InFlight, c.SummaryAge = 8, 300*ms }, 160 * ms},
		// However old the summary, the router's own streams waiting there (100 ms) are still ahead.
		{
			"the router's own backlog stays",
			func(c *routing.Cluster) { c.BaseTTFT, c.SummaryAge, c.Waiting = 300*ms, time.Second, 8 },
			160 * ms,
		},
		// A saturated cluster's wait drains too: 20 ms + 8 × 1 s / 4 pods - 500 ms.
		{"a saturated cluster drains", func(c *routing.Cluster) {
			c.InFlight, c.SaturatedFraction, c.SummaryAge, c.InFlightAge = 8, 1, 500*ms, 500*ms
		}, 1580 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster("a", "r", 0, 10*ms)
			tt.modify(&c)
			if got := routing.Estimate(&c, req); got != tt.want {
				t.Fatalf("estimate = %v, want %v", got, tt.want)
			}
		})
	}
}

func BenchmarkDecide100Clusters(b *testing.B) {
	cs := make([]routing.Cluster, 100)
	regions := []string{"us-east-1", "us-west-2", "eu-west-1"}
	for i := range cs {
		cs[i] = cluster("c", regions[i%3], 0.85+float64(i%10)/100, time.Duration(i%7+1)*10*ms)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := routing.Decide(
			"us-east-1",
			cs,
			routing.DefaultPolicy(),
			req,
			routing.DefaultOptions(),
			rng,
		); err != nil {
			b.Fatal(err)
		}
	}
}

// A local cluster under the overflow threshold keeps its traffic while it is idle, even when a
// faster GPU generation elsewhere is estimated more than LocalPreference times sooner; once its
// work waits (a queue, or a request in flight per pod) the much faster remote cluster wins.
func TestLocalPreferenceOnlyWhenBusy(t *testing.T) {
	req := routing.Request{PromptTokens: 4000, AvgTokens: 4200}
	slow := cluster("east-slow", "us-east-1", 0.1, 1*ms)
	slow.PrefillTokensPerSec, slow.BaseTTFT = 3_000, 60*ms // 1.4 s for this prompt
	fast := cluster("west-fast", "us-west-2", 0.1, 2*ms)
	fast.PrefillTokensPerSec = 30_000 // 0.15 s
	inFlight := slow
	inFlight.InFlight = slow.ReadyPods
	for _, tc := range []struct {
		name  string
		local routing.Cluster
		want  string
		route routing.Route
	}{
		{"idle local keeps its traffic", slow, "east-slow", routing.RouteLocal},
		{"queued local passes over", busy(slow, 500*ms), "west-fast", routing.RouteOverflow},
		{"a request in flight per pod", inFlight, "west-fast", routing.RouteOverflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := []routing.Cluster{tc.local, fast}
			d, err := routing.Decide(
				"us-east-1",
				cs,
				routing.Policy{OverflowThreshold: 0.8},
				req,
				routing.DefaultOptions(),
				rand.New(rand.NewPCG(1, 2)),
			)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs[d.Targets[0]].Name; got != tc.want || d.Route != tc.route {
				t.Fatalf("chose %s (%s), want %s (%s): %+v", got, d.Route, tc.want, tc.route, d.Explain)
			}
		})
	}
}

// A local cluster where this router's requests queue for their first token (BacklogPerPod per
// pod) is past its throughput: it is passed over as soon as a cluster elsewhere is estimated
// sooner, without waiting for LocalPreference's margin; short of the backlog, or when elsewhere
// is slower, it keeps its traffic.
func TestBacklogPassesLocalOver(t *testing.T) {
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200}
	west := cluster("west", "us-west-2", 0.1, 70*ms) // 70 + 20 + 50 = 140 ms
	local := func(waiting int, wait time.Duration) routing.Cluster {
		c := busy(cluster("east", "us-east-1", 0.3, 2*ms), wait) // 4 pods, 50 ms per prompt
		c.Waiting = waiting
		return c
	}
	off := routing.DefaultOptions()
	off.BacklogPerPod = 0
	for _, tc := range []struct {
		name   string
		local  routing.Cluster
		remote routing.Cluster
		opt    routing.Options
		want   string
		reason contract.Reason // the local cluster's reason when passed over
		// handBack is the offer made to the busy local cluster kept: backlogged, the throughput
		// rule's limit, 50 ms of common prefill + 1.2 × the rest of the remote estimate; short
		// of the backlog, 3 × the remote estimate (LocalPreference); less east's 2-ms RTT.
		handBack time.Duration
	}{
		// Short of the backlog only LocalPreference applies, on whole estimates: 252 ms against
		// 140 ms, 1.8×. The throughput rule compares the time to start (the 50 ms prefill is the
		// same everywhere): 2 + 200 = 202 ms against 70 + 20 = 90 for west.
		// west: 140 ms, so 3 × 140 − 2.
		{"short of the backlog", local(7, 200*ms), west, routing.DefaultOptions(), "east", "", 418 * ms},
		{"backlogged, elsewhere sooner", local(8, 200*ms), west, routing.DefaultOptions(), "west", contract.ReasonNotNearBest, 0},
		// eu: 470 ms: 50 + 1.2 × 420 − 2.
		{"backlogged, elsewhere slower", local(8, 200*ms), cluster("eu", "eu-west-1", 0.1, 400*ms), routing.DefaultOptions(), "east", "", 552 * ms},
		// eu: 190 + 20 = 210 ms to start, later than local's 202.
		{"backlogged, elsewhere near-best", local(8, 200*ms), cluster("eu", "eu-west-1", 0.1, 190*ms), routing.DefaultOptions(), "east", "", 300 * ms},
		// eu: 150 + 20 = 170 ms: local's 202 ms is within 20% of it.
		{"backlogged, elsewhere sooner within the window", local(8, 200*ms), cluster("eu", "eu-west-1", 0.1, 150*ms), routing.DefaultOptions(), "east", "", 252 * ms},
		// eu: 140 + 20 = 160 ms: local's 202 ms is beyond 20% of it.
		{"backlogged, elsewhere sooner beyond the window", local(8, 200*ms), cluster("eu", "eu-west-1", 0.1, 140*ms), routing.DefaultOptions(), "eu", "", 0},
		{"rule turned off", local(12, 200*ms), west, off, "east", "", 418 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := []routing.Cluster{tc.local, tc.remote}
			d, err := routing.Decide("us-east-1", cs, routing.DefaultPolicy(), req, tc.opt, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if got := cs[d.Targets[0]].Name; got != tc.want {
				t.Fatalf("chose %s, want %s: %+v", got, tc.want, d.Explain)
			}
			if tc.reason != "" && d.Explain[0].Reason != tc.reason {
				t.Fatalf("local reason %q, want %q", d.Explain[0].Reason, tc.reason)
			}
			if want := map[string]contract.Reason{"west": contract.ReasonPastThroughput, "eu": contract.ReasonPastThroughput}[tc.want]; d.LeftBecause != want {
				t.Fatalf("left because %q, want %q", d.LeftBecause, want)
			}
			if d.HandBack != tc.handBack {
				t.Fatalf("hand-back offer %v, want %v", d.HandBack, tc.handBack)
			}
			lo := tc.opt
			lo.LocalOnly = true
			if d, err := routing.Decide("us-east-1", cs, routing.DefaultPolicy(), req, lo, nil); err != nil || d.HandBack != 0 {
				t.Fatalf("local-only: hand-back offer %v, %v; want none (nowhere else to go)", d.HandBack, err)
			}
		})
	}
}

// The throughput rule weighs a cluster's wait, not the prompt's own prefill, which every cluster
// would need: a long prompt leaves a backlogged local cluster (or stays) exactly when a short one
// does. The LocalPreference margin weighs whole estimates: a long prompt's prefill makes a busy
// home cluster's wait count for less.
func TestLocalRulesAndPromptLength(t *testing.T) {
	west := cluster("west", "us-west-2", 0.1, 70*ms) // 70 + 20 = 90 ms to start
	backlogged := func(wait time.Duration) routing.Cluster {
		c := busy(cluster("east", "us-east-1", 0.3, 2*ms), wait)
		c.Waiting, c.WaitingTokens = 8, 8000 // 2 per pod, 100 ms of prefill over the 4 pods
		return c
	}
	for _, tc := range []struct {
		name   string
		local  routing.Cluster
		tokens int
		want   string
	}{
		// backlogged, 122 ms to start against 90: beyond the 20% window, whatever the prompt.
		{"backlogged, short prompt", backlogged(120 * ms), 200, "west"},
		{"backlogged, long prompt", backlogged(120 * ms), 20000, "west"},
		// backlogged, 102 ms against 90: within the window, whatever the prompt.
		{"backlogged within the window, short prompt", backlogged(100 * ms), 200, "east"},
		{"backlogged within the window, long prompt", backlogged(100 * ms), 20000, "east"},
		// busy, not backlogged: 302 + 10 ms against 90 + 10: 3.1×, beyond LocalPreference.
		{"busy, short prompt", busy(cluster("east", "us-east-1", 0.3, 2*ms), 300*ms), 200, "west"},
		// 302 + 1000 ms against 90 + 1000: 1.2×.
		{"busy, long prompt", busy(cluster("east", "us-east-1", 0.3, 2*ms), 300*ms), 20000, "east"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := []routing.Cluster{tc.local, west}
			req := routing.Request{PromptTokens: tc.tokens, AvgTokens: tc.tokens + 200}
			d, err := routing.Decide(
				"us-east-1",
				cs,
				routing.DefaultPolicy(),
				req,
				routing.DefaultOptions(),
				rand.New(rand.NewPCG(1, 2)),
			)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs[d.Targets[0]].Name; got != tc.want {
				t.Fatalf("chose %s, want %s: %+v", got, tc.want, d.Explain)
			}
		})
	}
}

// LeftBecause names why a request left the region: the local cluster nearest to keeping it.
func TestLeftBecause(t *testing.T) {
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200}
	west := cluster("west", "us-west-2", 0.1, 70*ms)
	drained := cluster("east-d", "us-east-1", 0.1, 2*ms)
	drained.Drained = true
	remote := busy(cluster("east-b", "us-east-1", 0.3, 2*ms), 500*ms) // 552 ms: > 3 × 140
	full := busy(cluster("east-f", "us-east-1", 0.9, 2*ms), 500*ms)
	tests := []struct {
		name     string
		clusters []routing.Cluster
		want     contract.Reason
	}{
		{"no local cluster", []routing.Cluster{west}, contract.ReasonNoLocal},
		{"drained", []routing.Cluster{drained, west}, contract.ReasonUnavailable},
		{"over threshold beats drained", []routing.Cluster{drained, full, west}, contract.ReasonOverThreshold},
		{"remote sooner beats over threshold", []routing.Cluster{full, remote, west}, contract.ReasonRemoteSooner},
		{"kept local", []routing.Cluster{cluster("east", "us-east-1", 0.1, 2*ms), west}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := routing.Decide(
				"us-east-1",
				tt.clusters,
				routing.DefaultPolicy(),
				req,
				routing.DefaultOptions(),
				rand.New(rand.NewPCG(1, 2)),
			)
			if err != nil {
				t.Fatal(err)
			}
			if d.LeftBecause != tt.want {
				t.Fatalf("left because %q, want %q: %+v", d.LeftBecause, tt.want, d.Explain)
			}
		})
	}
}
