package scheduling_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
)

// TestDefaultProfileSessionAffinity runs a conversation through the default profile over four
// idle, equal pods: every turn goes to the pod of the first while it has room, and once that pod
// is saturated the session moves and then sticks to its new pod. The scorer's metrics are on the
// scheduler's registerer.
func TestDefaultProfileSessionAffinity(t *testing.T) {
	var fakes []*plugintest.FakeEndpoint
	for i := range 4 {
		fakes = append(fakes, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", 0, 1, 0.1, plugintest.Epoch))
	}
	h := plugintest.NewHandle(plugintest.Endpoints(fakes...)...)
	cfg := scheduling.DefaultConfig()
	cfg.Now = h.Now
	reg := prometheus.NewPedanticRegistry()
	s, err := scheduling.New(cfg, h, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	turn := func(i int, session string) string {
		t.Helper()
		// Each turn's prompt is distinct, so the prefix scorer does not decide for the scorer.
		req := &framework.Request{Model: "m", BaseModel: "m", PromptTokens: 100, SessionID: session, Tenant: "t",
			PrefixHashes: []uint64{uint64(i)<<32 | 1}}
		res, err := s.Schedule(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		s.PreRequest(context.Background(), req, res)
		return res.Targets[0].Meta().Address
	}
	first := turn(0, "conv")
	for i := 1; i < 20; i++ {
		if got := turn(i, "conv"); got != first {
			t.Fatalf("turn %d went to %s, want %s (the session's pod, which has room)", i, got, first)
		}
	}
	for _, e := range fakes {
		if e.Meta().Address == first {
			plugintest.SetLoad(e, 0, 8, 0.9, h.Now()) // KV over the threshold: saturated
		}
	}
	moved := turn(20, "conv")
	if moved == first {
		t.Fatalf("the session stayed on saturated %s", first)
	}
	for i := 21; i < 30; i++ {
		if got := turn(i, "conv"); got != moved {
			t.Fatalf("turn %d went to %s, want %s (where the session moved)", i, got, moved)
		}
	}
	want := `
# HELP switchyard_gateway_session_affinity_decisions_total Requests with a session id by where they went: ` +
		`stuck (where the session was served last), moved (elsewhere: that pod was saturated, gone or outscored) or ` +
		`new (the session was not known).
# TYPE switchyard_gateway_session_affinity_decisions_total counter
switchyard_gateway_session_affinity_decisions_total{outcome="moved",plugin="session-affinity-scorer"} 1
switchyard_gateway_session_affinity_decisions_total{outcome="new",plugin="session-affinity-scorer"} 1
switchyard_gateway_session_affinity_decisions_total{outcome="stuck",plugin="session-affinity-scorer"} 28
`
	if err := testutil.GatherAndCompare(
		reg,
		strings.NewReader(want),
		"switchyard_gateway_session_affinity_decisions_total",
	); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultSessionWeight pins what the default profile's session-affinity weight (3, against
// predicted-ttft-scorer's 6) buys: a session stays on its pod while that pod runs requests or has
// one request waiting (a turn arriving while the previous one, or another conversation's, is still
// queued), and moves once two are waiting, where the wait outweighs re-reading its prefix on an
// idle pod. Weight 1 or 2 would move the session behind a single waiting request; weight 4 would
// keep it behind two (TestDefaultSessionWeight/queue_2 fails with it).
func TestDefaultSessionWeight(t *testing.T) {
	tests := []struct {
		name             string
		waiting, running int
		stays            bool
	}{
		{"idle", 0, 0, true},
		{"running 3", 0, 3, true},
		{"queue 1", 1, 1, true},
		{"queue 2", 2, 1, false},
		{"queue 3", 3, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fakes []*plugintest.FakeEndpoint
			for i := range 4 {
				fakes = append(fakes, plugintest.Endpoint(fmt.Sprintf("10.0.0.%d:8000", i+1), "m", 0, 0, 0.1,
					plugintest.Epoch))
			}
			h := plugintest.NewHandle(plugintest.Endpoints(fakes...)...)
			cfg := scheduling.DefaultConfig()
			cfg.Now = h.Now
			s, err := scheduling.New(cfg, h, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			schedule := func(turn uint64) string {
				req := &framework.Request{Model: "m", BaseModel: "m", PromptTokens: 1000, SessionID: "conv",
					Tenant: "t", PrefixHashes: []uint64{turn}}
				res, err := s.Schedule(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				s.PreRequest(context.Background(), req, res)
				return res.Targets[0].Meta().Address
			}
			home := schedule(1)
			for _, e := range fakes {
				if e.Meta().Address == home {
					plugintest.SetLoad(e, tt.waiting, tt.running, 0.1, h.Now())
				}
			}
			if got := schedule(2) == home; got != tt.stays {
				t.Fatalf("%d waiting and %d running on the session's pod: stayed %v, want %v",
					tt.waiting, tt.running, got, tt.stays)
			}
		})
	}
}
