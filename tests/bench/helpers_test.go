package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/tests/bench"
)

// gatewayBinary builds the cluster-gateway binary and removes it when tb ends.
func gatewayBinary(tb testing.TB) string {
	tb.Helper()
	bin, cleanup, err := bench.GatewayBinary("")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cleanup)
	return bin
}

// routerBinary builds the global-router binary and removes it when tb ends.
func routerBinary(tb testing.TB) string {
	tb.Helper()
	bin, cleanup, err := bench.RouterBinary("")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cleanup)
	return bin
}

// runScenarioSmoke runs the named scenario for 5 s on two l40s pods at a capacity of 2 req/s:
// every policy's target serves requests without an error, and the verdict is decided.
func runScenarioSmoke(t *testing.T, scenario string) {
	t.Helper()
	bin := gatewayBinary(t)
	sc, err := bench.Lookup(scenario)
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
