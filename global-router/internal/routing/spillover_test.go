package routing_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchyard-dev/switchyard/contract"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

func spilloverOptions() routing.Options {
	opt := routing.DefaultOptions()
	opt.Spillover = true
	return opt
}

// TestSpillover pins the spillover mode: local while a local cluster is under the policy's
// overflow threshold however slow it is estimated, then the nearest region by RTT however busy
// it is estimated, never a latency-estimated choice. Fallbacks (retries) go by RTT too: the rest
// of the pool, then the other clusters with room, the router's own over-threshold ones included.
func TestSpillover(t *testing.T) {
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200}
	tests := []struct {
		name        string
		clusters    []routing.Cluster
		policy      routing.Policy
		wantErr     error
		wantTargets []string
		wantRoute   routing.Route
		wantLeft    contract.Reason
		reasonOf    map[string]contract.Reason
	}{
		{
			// global mode leaves: west is estimated far sooner (remote_sooner); spillover stays.
			name: "busy local cluster under the threshold keeps its traffic",
			clusters: []routing.Cluster{
				busy(cluster("east-a", "us-east-1", 0.7, 2*ms), 3000*ms),
				cluster("west", "us-west-2", 0.0, 70*ms),
			},
			policy: routing.DefaultPolicy(), wantTargets: []string{"east-a", "west"}, wantRoute: routing.RouteLocal,
			reasonOf: map[string]contract.Reason{"east-a": contract.ReasonChosenLocal, "west": contract.ReasonLocalHasRoom},
		},
		{
			// eu is estimated sooner (idle), west nearer (busy): spillover takes the round trip.
			name: "over the threshold: the nearest region, not the best estimate",
			clusters: []routing.Cluster{
				cluster("east-a", "us-east-1", 0.85, 2*ms),
				busy(cluster("west", "us-west-2", 0.5, 70*ms), 2000*ms),
				cluster("eu", "eu-west-1", 0.0, 80*ms),
			},
			policy: routing.DefaultPolicy(), wantTargets: []string{"west", "east-a", "eu"}, wantRoute: routing.RouteOverflow,
			wantLeft: contract.ReasonOverThreshold,
			reasonOf: map[string]contract.Reason{"east-a": contract.ReasonOverThreshold, "west": contract.ReasonChosenOverflow,
				"eu": contract.ReasonNotNearest},
		},
		{
			name: "a saturated nearest region is skipped",
			clusters: []routing.Cluster{
				cluster("east-a", "us-east-1", 0.9, 2*ms),
				cluster("west", "us-west-2", 1.0, 70*ms),
				cluster("eu", "eu-west-1", 0.3, 80*ms),
			},
			policy:      routing.DefaultPolicy(),
			wantTargets: []string{"eu", "east-a"},
			wantRoute:   routing.RouteOverflow,
			wantLeft:    contract.ReasonOverThreshold,
			reasonOf:    map[string]contract.Reason{"west": contract.ReasonSaturated, "eu": contract.ReasonChosenOverflow},
		},
		{
			name: "the overflow cap moves overflow to the next region",
			clusters: func() []routing.Cluster {
				w := cluster("west", "us-west-2", 0.1, 70*ms)
				w.RegionOverflowInFlight = 5
				return []routing.Cluster{cluster("east-a", "us-east-1", 0.9, 2*ms), w, cluster("eu", "eu-west-1", 0.1, 80*ms)}
			}(),
			policy:      routing.Policy{OverflowThreshold: 0.8, OverflowCap: 5},
			wantTargets: []string{"eu", "east-a"}, wantRoute: routing.RouteOverflow, wantLeft: contract.ReasonOverThreshold,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonOverflowCap, "eu": contract.ReasonChosenOverflow},
		},
		{
			name: "residency holds",
			clusters: []routing.Cluster{
				cluster("east-a", "us-east-1", 0.9, 2*ms),
				cluster("west", "us-west-2", 0.1, 70*ms),
				cluster("eu", "eu-west-1", 0.1, 80*ms),
			},
			policy:      routing.Policy{OverflowThreshold: 0.8, AllowedRegions: []string{"us-east-1", "eu-west-1"}},
			wantTargets: []string{"eu", "east-a"}, wantRoute: routing.RouteOverflow, wantLeft: contract.ReasonOverThreshold,
			reasonOf: map[string]contract.Reason{"west": contract.ReasonRegionNotAllowed},
		},
		{
			name: "no local cluster serves: the nearest region",
			clusters: []routing.Cluster{
				cluster("eu", "eu-west-1", 0.1, 80*ms),
				cluster("west", "us-west-2", 0.1, 70*ms),
			},
			policy: routing.DefaultPolicy(), wantTargets: []string{"west", "eu"}, wantRoute: routing.RouteOverflow,
			wantLeft: contract.ReasonNoLocal,
		},
		{
			name: "everything saturated has no room",
			clusters: []routing.Cluster{
				cluster("east-a", "us-east-1", 1.0, 2*ms),
				cluster("west", "us-west-2", 1.0, 70*ms),
			},
			policy: routing.DefaultPolicy(), wantErr: routing.ErrNoRoom,
		},
		{
			name: "every remote region capped has no room",
			clusters: func() []routing.Cluster {
				w := cluster("west", "us-west-2", 0.1, 70*ms)
				w.RegionOverflowInFlight = 1
				return []routing.Cluster{cluster("east-a", "us-east-1", 0.9, 2*ms), w}
			}(),
			policy: routing.Policy{OverflowThreshold: 0.8, OverflowCap: 1}, wantErr: routing.ErrNoRoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := routing.Decide("us-east-1", tt.clusters, tt.policy, req, spilloverOptions(), rand.New(rand.NewPCG(1, 2)))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			for _, e := range d.Explain {
				if want, ok := tt.reasonOf[e.Cluster]; ok && e.Reason != want {
					t.Errorf("%s: reason %q, want %q", e.Cluster, e.Reason, want)
				}
			}
			if tt.wantErr != nil {
				return
			}
			if got := names(tt.clusters, d.Targets); !slices.Equal(got, tt.wantTargets) {
				t.Fatalf("targets %v, want %v (explain %+v)", got, tt.wantTargets, d.Explain)
			}
			if d.Route != tt.wantRoute || d.LeftBecause != tt.wantLeft || d.HandBack != 0 {
				t.Fatalf(
					"route %s, left because %q, hand-back %v; want %s, %q, none",
					d.Route,
					d.LeftBecause,
					d.HandBack,
					tt.wantRoute,
					tt.wantLeft,
				)
			}
			if !d.Explain[d.Targets[0]].Chosen {
				t.Fatal("first target not marked chosen")
			}
		})
	}
}

// TestSpilloverSpreadsUniformly checks that the kept clusters share the requests evenly (a
// seeded source), whatever their estimates: local ones while they have room, and the nearest
// region's when none has.
func TestSpilloverSpreadsUniformly(t *testing.T) {
	req := routing.Request{PromptTokens: 1000, AvgTokens: 1200}
	tests := []struct {
		name     string
		clusters []routing.Cluster
		want     map[string]bool // the clusters sharing
	}{
		{"local clusters", []routing.Cluster{
			cluster("east-a", "us-east-1", 0.1, 2*ms), busy(cluster("east-b", "us-east-1", 0.7, 3*ms), 900*ms),
			cluster("east-c", "us-east-1", 0.85, 2*ms), cluster("west", "us-west-2", 0, 70*ms),
		}, map[string]bool{"east-a": true, "east-b": true}},
		{"the nearest region's clusters", []routing.Cluster{
			cluster("east-a", "us-east-1", 0.9, 2*ms), cluster("west-a", "us-west-2", 0.1, 70*ms),
			busy(cluster("west-b", "us-west-2", 0.6, 72*ms), 900*ms), cluster("eu", "eu-west-1", 0, 80*ms),
		}, map[string]bool{"west-a": true, "west-b": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			counts := map[string]int{}
			for range 2000 {
				d, err := routing.Decide("us-east-1", tt.clusters, routing.DefaultPolicy(), req, spilloverOptions(), rng)
				if err != nil {
					t.Fatal(err)
				}
				counts[tt.clusters[d.Targets[0]].Name]++
			}
			for name, n := range counts {
				if !tt.want[name] || n < 850 || n > 1150 {
					t.Fatalf("shares %v, want about 1000 each for %v", counts, tt.want)
				}
			}
		})
	}
}

// TestLocalOnlyWinsOverSpillover: with both set nothing leaves the region.
func TestLocalOnlyWinsOverSpillover(t *testing.T) {
	opt := spilloverOptions()
	opt.LocalOnly = true
	cs := []routing.Cluster{cluster("east-a", "us-east-1", 0.9, 2*ms), cluster("west", "us-west-2", 0.1, 70*ms)}
	d, err := routing.Decide(
		"us-east-1",
		cs,
		routing.DefaultPolicy(),
		routing.Request{PromptTokens: 100, AvgTokens: 200},
		opt,
		nil,
	)
	if err != nil || cs[d.Targets[0]].Name != "east-a" || d.Explain[1].Reason != contract.ReasonLocalOnly {
		t.Fatalf("decision %v %+v, %v; want east-a with west local_only", names(cs, d.Targets), d.Explain, err)
	}
}
