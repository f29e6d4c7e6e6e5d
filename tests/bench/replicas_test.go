package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/bench"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestReplicasSmoke runs the replicas scenario briefly on two pods: one gateway, three sharing
// replicas and three alone behind their round-robin fronts serve every request, and the verdict
// is decided. That the replicas share their state is cluster-gateway's TestReplicasSharePrefixRoutes
// and TestReplicasShareInFlight (internal/app).
func TestReplicasSmoke(t *testing.T) {
	harness.EndToEnd(t)
	bin, cleanup, err := bench.GatewayBinary("")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	sc, err := bench.Lookup("replicas")
	if err != nil {
		t.Fatal(err)
	}
	sc.Pools = []bench.Pool{{Profile: "l40s", Count: 2}}
	cfg := bench.DefaultConfig()
	cfg.Scenario, cfg.Policies = sc, sc.Policies
	cfg.Duration, cfg.Capacity = 5*time.Second, 2
	cfg.GatewayBin, cfg.Out = bin, t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict == nil {
		t.Fatal("no verdict")
	}
	for _, tg := range res.Report.Targets {
		if tg.Requests == 0 || tg.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors %v", tg.Name, tg.Requests, tg.Errors, tg.ErrorsByKind)
		}
	}
	t.Logf("%s: %s", res.Target, res.Verdict.Detail)
}
