package routing_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// TestDecideSession checks session affinity in Decide: the session's cluster is kept while it is
// in the pool with an estimate near the best, and every rule that takes a cluster out of the pool
// (saturation, drains, the overflow threshold, local first, the overflow cap) still wins.
func TestDecideSession(t *testing.T) {
	east := func() []routing.Cluster {
		return []routing.Cluster{cluster("east-a", "us-east-1", 0.3, 2*ms), cluster("east-b", "us-east-1", 0.3, 2*ms),
			cluster("east-c", "us-east-1", 0.3, 2*ms), cluster("west", "us-west-2", 0.1, 70*ms)}
	}
	tests := []struct {
		name      string
		clusters  func() []routing.Cluster
		policy    routing.Policy
		session   string
		slack     float64
		want      string // the chosen cluster, or "" for any but the session's
		reason    contract.Reason
		wantRoute routing.Route
	}{
		{
			"sticks among equals",
			east,
			routing.DefaultPolicy(),
			"east-b",
			0.5,
			"east-b",
			contract.ReasonChosenSession,
			routing.RouteLocal,
		},
		{"sticks while somewhat slower", func() []routing.Cluster {
			cs := east()
			cs[1].BaseTTFT = 25 * ms // ~1.2x the others' estimate
			return cs
		}, routing.DefaultPolicy(), "east-b", 0.5, "east-b", contract.ReasonChosenSession, routing.RouteLocal},
		{"moves when far slower", func() []routing.Cluster {
			cs := east()
			cs[1].BaseTTFT = 200 * ms
			return cs
		}, routing.DefaultPolicy(), "east-b", 0.5, "", "", routing.RouteLocal},
		{"moves when saturated", func() []routing.Cluster {
			cs := east()
			cs[1].FreeKVTokens = 0
			return cs
		}, routing.DefaultPolicy(), "east-b", 0.5, "", "", routing.RouteLocal},
		{"moves when drained", func() []routing.Cluster {
			cs := east()
			cs[1].Drained = true
			return cs
		}, routing.DefaultPolicy(), "east-b", 0.5, "", "", routing.RouteLocal},
		{"moves when over the overflow threshold", func() []routing.Cluster {
			cs := east()
			cs[1].FreeKVTokens = 100_000 // 0.9 used
			return cs
		}, routing.DefaultPolicy(), "east-b", 0.5, "", "", routing.RouteLocal},
		{"local first wins over a remote session", east, routing.DefaultPolicy(), "west", 5, "", "", routing.RouteLocal},
		{"a remote session sticks when it overflows", func() []routing.Cluster {
			return []routing.Cluster{
				busy(cluster("east-a", "us-east-1", 0.9, 2*ms), 500*ms),
				cluster("west-a", "us-west-2", 0.1, 70*ms),
				cluster("west-b", "us-west-2", 0.1, 70*ms),
				cluster("west-c", "us-west-2", 0.1, 70*ms),
			}
		}, routing.DefaultPolicy(), "west-c", 0.5, "west-c", contract.ReasonChosenSession, routing.RouteOverflow},
		{"the overflow cap wins", func() []routing.Cluster {
			cs := []routing.Cluster{
				busy(cluster("east-a", "us-east-1", 0.9, 2*ms), 500*ms),
				cluster("west-a", "us-west-2", 0.1, 70*ms),
				cluster("eu-a", "eu-west-1", 0.1, 70*ms),
			}
			cs[1].RegionOverflowInFlight = 5
			return cs
		}, routing.Policy{OverflowThreshold: 0.8, OverflowCap: 5}, "west-a", 0.5, "eu-a",
			contract.ReasonChosenOverflow, routing.RouteOverflow},
		{"residency wins", east, routing.Policy{OverflowThreshold: 0.8, AllowedRegions: []string{"us-west-2"}}, "east-b", 0.5,
			"west", contract.ReasonChosenOverflow, routing.RouteOverflow},
		{"an unknown cluster is no session", east, routing.DefaultPolicy(), "gone", 0.5, "", "", routing.RouteLocal},
		{"negative slack turns it off", east, routing.DefaultPolicy(), "east-b", -1, "", "", routing.RouteLocal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := routing.DefaultOptions()
			opt.SessionSlack = tt.slack
			req := routing.Request{PromptTokens: 1000, AvgTokens: 1200, SessionCluster: tt.session}
			stuck := 0
			for seed := range uint64(50) {
				cs := tt.clusters()
				d, err := routing.Decide("us-east-1", cs, tt.policy, req, opt, rand.New(rand.NewPCG(seed, 1)))
				if err != nil {
					t.Fatal(err)
				}
				got := cs[d.Targets[0]].Name
				if d.Route != tt.wantRoute {
					t.Fatalf("route %s, want %s", d.Route, tt.wantRoute)
				}
				if got == tt.session {
					stuck++
				}
				if tt.want == "" {
					if d.Session || d.Explain[d.Targets[0]].Reason == contract.ReasonChosenSession {
						t.Fatalf("seed %d: chose %s for the session; want the session to move", seed, got)
					}
					continue
				}
				if got != tt.want || d.Explain[d.Targets[0]].Reason != tt.reason ||
					d.Session != (tt.reason == contract.ReasonChosenSession) {
					t.Fatalf(
						"seed %d: chose %s (%s, session %v), want %s (%s)",
						seed,
						got,
						d.Explain[d.Targets[0]].Reason,
						d.Session,
						tt.want,
						tt.reason,
					)
				}
			}
			if tt.want == "" && tt.name == "local first wins over a remote session" && stuck > 0 {
				t.Fatalf("a remote session cluster was kept %d times while local clusters had room", stuck)
			}
		})
	}
}

// TestSessionMargin checks the two parts of the margin a session's cluster keeps it by: an
// absolute floor, so idle clusters a few milliseconds apart (one slow engine step) do not move
// a session, and a credit of the prompt's prefill, which the session's cluster has cached.
func TestSessionMargin(t *testing.T) {
	tests := []struct {
		name        string
		prompt      int
		sessionWait time.Duration // the session cluster's predicted wait; the others' is 5 ms
		floor       time.Duration
		wantStick   bool
	}{
		{"idle clusters: a slow step is within the floor", 10, 40 * ms, 50 * ms, true},
		{"idle clusters: the same gap moves without a floor", 10, 40 * ms, 0, false},
		{"idle clusters: beyond the floor moves", 10, 100 * ms, 50 * ms, false},
		{"long prompt: the cached prefill is credited", 40_000, 1500 * ms, 50 * ms, true},
		{"long prompt: far slower even with the credit moves", 40_000, 3500 * ms, 50 * ms, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := []routing.Cluster{
				cluster("east-a", "us-east-1", 0.3, 2*ms), cluster("east-b", "us-east-1", 0.3, 2*ms),
				cluster("east-c", "us-east-1", 0.3, 2*ms),
			}
			for i := range cs {
				cs[i].BaseTTFT = 5 * ms
			}
			cs[1].BaseTTFT = tt.sessionWait
			opt := routing.DefaultOptions()
			opt.SessionFloor = tt.floor
			req := routing.Request{PromptTokens: tt.prompt, AvgTokens: tt.prompt + 200, SessionCluster: "east-b"}
			for seed := range uint64(20) {
				d, err := routing.Decide("us-east-1", cs, routing.DefaultPolicy(), req, opt,
					rand.New(rand.NewPCG(seed, 1)))
				if err != nil {
					t.Fatal(err)
				}
				if stuck := cs[d.Targets[0]].Name == "east-b"; stuck != tt.wantStick || d.Session != tt.wantStick {
					t.Fatalf("seed %d: chose %s (session %v), want stick %v; estimates %v",
						seed, cs[d.Targets[0]].Name, d.Session, tt.wantStick, d.Explain)
				}
			}
		})
	}
}
