package routing_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// A request's own TTFT objective (x-slo-ttft-ms) steers it to the clusters estimated to meet it:
// a local cluster estimated to miss it is passed over for one elsewhere estimated to meet it, and
// among the pool the clusters that meet it are preferred; when every cluster or none meets it the
// decision is the usual one.
func TestTTFTObjectivePrefersClustersThatMeetIt(t *testing.T) {
	// Estimates: RTT + wait + 1,000 tokens at 20,000 tokens/s (50 ms).
	slowLocal := func() []routing.Cluster { // east 352 ms (busy, not 3× slower), west 140 ms
		return []routing.Cluster{
			busy(cluster("east", "us-east-1", 0.3, 2*ms), 300*ms),
			cluster("west", "us-west-2", 0, 70*ms),
		}
	}
	twoLocal := func() []routing.Cluster { // east-a 72 ms, east-b 82 ms: both near the best
		b := cluster("east-b", "us-east-1", 0.3, 2*ms)
		b.BaseTTFT = 30 * ms
		return []routing.Cluster{cluster("east-a", "us-east-1", 0.3, 2*ms), b, cluster("west", "us-west-2", 0, 70*ms)}
	}
	tests := []struct {
		name      string
		clusters  func() []routing.Cluster
		slo       time.Duration
		wantFirst string
		wantRoute routing.Route
		wantLeft  contract.Reason
		reasonOf  map[string]contract.Reason
	}{
		{
			name:      "no objective: the busy local cluster keeps it",
			clusters:  slowLocal,
			wantFirst: "east",
			wantRoute: routing.RouteLocal,
		},
		{name: "local misses, elsewhere meets: overflow", clusters: slowLocal, slo: 200 * ms, wantFirst: "west",
			wantRoute: routing.RouteOverflow, wantLeft: contract.ReasonMissesSLO,
			reasonOf: map[string]contract.Reason{"east": contract.ReasonMissesSLO}},
		{name: "local meets: stays", clusters: slowLocal, slo: 400 * ms, wantFirst: "east", wantRoute: routing.RouteLocal},
		{
			name:      "none meets: the usual choice",
			clusters:  slowLocal,
			slo:       100 * ms,
			wantFirst: "east",
			wantRoute: routing.RouteLocal,
		},
		{name: "among local clusters, the one that meets", clusters: twoLocal, slo: 80 * ms, wantFirst: "east-a",
			wantRoute: routing.RouteLocal, reasonOf: map[string]contract.Reason{"east-b": contract.ReasonMissesSLO}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(20) { // power-of-d draws: every draw must respect the objective
				cs := tt.clusters()
				req := routing.Request{PromptTokens: 1000, AvgTokens: 1200, TTFTSLO: tt.slo}
				d, err := routing.Decide(
					"us-east-1",
					cs,
					routing.DefaultPolicy(),
					req,
					routing.DefaultOptions(),
					rand.New(rand.NewPCG(seed, 1)),
				)
				if err != nil {
					t.Fatal(err)
				}
				if got := cs[d.Targets[0]].Name; got != tt.wantFirst || d.Route != tt.wantRoute || d.LeftBecause != tt.wantLeft {
					t.Fatalf("seed %d: chose %s via %s (left: %q), want %s via %s (left: %q)", seed, got, d.Route, d.LeftBecause,
						tt.wantFirst, tt.wantRoute, tt.wantLeft)
				}
				for _, e := range d.Explain {
					if want, ok := tt.reasonOf[e.Cluster]; ok && e.Reason != want {
						t.Fatalf("seed %d: %s reason %q, want %q", seed, e.Cluster, e.Reason, want)
					}
				}
			}
		})
	}
}
