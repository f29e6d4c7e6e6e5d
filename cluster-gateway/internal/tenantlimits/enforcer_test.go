package tenantlimits_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/tenantlimits"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newEnforcer(t *testing.T, file string, reg prometheus.Registerer) (*tenantlimits.Enforcer, *clock, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Unix(1_000_000_020, 0)} // 40 s into a minute
	cfg := tenantlimits.DefaultConfig()
	cfg.Path, cfg.Now, cfg.PollInterval = path, c.Now, 10*time.Millisecond
	e, err := tenantlimits.New(cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	return e, c, path
}

func TestEnforcerLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, c, _ := newEnforcer(t, "acme: {max_concurrent: 2}\nfast: {requests_per_second: 2}\n"+
		"tok: {tokens_per_minute: 1000}\n\"*\": {max_concurrent: 1}\nfree: {}\n", reg)

	// Concurrency: two in flight, the third refused until one ends.
	a1, _ := e.Admit("acme", 0)
	a2, _ := e.Admit("acme", 0)
	if _, ref := e.Admit(
		"acme",
		0,
	); ref == nil || ref.Limit != tenantlimits.LimitConcurrency ||
		ref.RetryAfter != time.Second {
		t.Fatalf("third concurrent: %+v, want a max_concurrent refusal after 1 s", ref)
	}
	a1.Finish(10)
	a1.Finish(10) // a second Finish does nothing
	if l, ref := e.Admit("acme", 0); ref != nil {
		t.Fatalf("after one ended: %+v", ref)
	} else {
		l.Refund()
	}
	a2.Refund()

	// Requests per second: a bucket of two, refilled at two a second.
	for i := range 2 {
		if l, ref := e.Admit("fast", 0); ref != nil {
			t.Fatalf("request %d: %+v", i, ref)
		} else {
			l.Finish(0)
		}
	}
	if _, ref := e.Admit("fast", 0); ref == nil || ref.Limit != tenantlimits.LimitRequests ||
		ref.RetryAfter != 500*time.Millisecond {
		t.Fatalf("third in the second: %+v, want requests_per_second after 500ms", ref)
	}
	c.Add(500 * time.Millisecond)
	if l, ref := e.Admit("fast", 0); ref != nil {
		t.Fatalf("after the refill: %+v", ref)
	} else {
		l.Finish(0)
	}

	// Tokens: the reservation, then the reported usage, is charged.
	l, ref := e.Admit("tok", 700)
	if ref != nil {
		t.Fatal(ref)
	}
	if _, ref := e.Admit("tok", 400); ref == nil || ref.Limit != tenantlimits.LimitTokens || ref.RetryAfter <= 0 {
		t.Fatalf("over the reservation: %+v, want tokens_per_minute", ref)
	}
	l.Finish(300)
	if used, inFlight := e.Used("tok"); used != 300 || inFlight != 0 {
		t.Fatalf("charged %d with %d in flight, want 300 and 0", used, inFlight)
	}
	big, ref := e.Admit("tok", 5000) // cut to the budget, but the window is not idle
	if ref == nil {
		big.Refund()
		t.Fatal("a reservation over what is left was admitted")
	}
	c.Add(2 * time.Minute) // the window has aged out
	big, ref = e.Admit("tok", 5000)
	if ref != nil {
		t.Fatalf("a large request into an idle window: %+v", ref)
	}
	big.Finish(-1) // usage unknown: the reservation (cut to 1000) stays
	if used, _ := e.Used("tok"); used != 1000 {
		t.Fatalf("charged %d, want the reservation 1000", used)
	}

	// Unlisted tenants share "*"; a tenant with empty limits is not limited.
	o, ref := e.Admit("stranger", 0)
	if ref != nil {
		t.Fatal(ref)
	}
	if _, ref := e.Admit("", 0); ref == nil || ref.Tenant != "" {
		t.Fatalf("a request without a tenant beside an unlisted one: %+v, want refused by *", ref)
	}
	if _, ref := e.Admit("*", 0); ref == nil {
		t.Fatal("a tenant named * escaped the * entry")
	}
	o.Refund()
	for range 3 {
		if l, ref := e.Admit("free", 1<<40); ref != nil || l != nil {
			t.Fatalf("free tenant: %v %+v, want no lease and no refusal", l, ref)
		}
	}
	want := `
# HELP switchyard_gateway_tenant_refused_total Requests refused 429 rate_limit_exceeded for their tenant's ` +
		`limits (--tenant-limits-file), by tenant (a tenant the file lists, at most 500, or * for the others; else ` +
		`other) and limit: tokens_per_minute, requests_per_second, max_concurrent.
# TYPE switchyard_gateway_tenant_refused_total counter
switchyard_gateway_tenant_refused_total{limit="max_concurrent",tenant="*"} 2
switchyard_gateway_tenant_refused_total{limit="max_concurrent",tenant="acme"} 1
switchyard_gateway_tenant_refused_total{limit="requests_per_second",tenant="fast"} 1
switchyard_gateway_tenant_refused_total{limit="tokens_per_minute",tenant="tok"} 2
`
	if err := testutil.GatherAndCompare(
		reg,
		strings.NewReader(want),
		"switchyard_gateway_tenant_refused_total",
	); err != nil {
		t.Fatal(err)
	}
}

// TestEnforcerReload: a changed file applies while the enforcer runs; a broken one keeps the
// limits in force and is counted; a broken file at start is an error.
func TestEnforcerReload(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, _, path := newEnforcer(t, "acme: {max_concurrent: 1}\n", reg)
	run(t, e)

	held, _ := e.Admit("acme", 0)
	if _, ref := e.Admit("acme", 0); ref == nil {
		t.Fatal("max_concurrent 1 not enforced")
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("acme: {max_concurrent: -3}\n")
	waitFor(t, func() bool { return reloadErrors(t, reg) >= 1 })
	if _, ref := e.Admit("acme", 0); ref == nil {
		t.Fatal("a rejected file lifted the limits in force")
	}
	write("acme: {max_concurrent: 3}\n")
	waitFor(t, func() bool {
		l, ref := e.Admit("acme", 0)
		l.Refund()
		return ref == nil
	})
	held.Refund()

	if err := os.WriteFile(path, []byte("acme: {unknown: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := tenantlimits.DefaultConfig()
	cfg.Path = path
	if _, err := tenantlimits.New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), `unknown key "unknown"`) {
		t.Fatalf("New on a broken file: %v, want an error naming the file and the key", err)
	}
	cfg.Path = filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := tenantlimits.New(cfg, nil, nil); err == nil {
		t.Fatal("New on a missing file succeeded")
	}
}

// TestEnforcerReloadReleasesTenants: a reload releases the counters of every tenant the file no
// longer lists and of every tenant whose limits changed (which then starts afresh); the others
// keep theirs.
func TestEnforcerReloadReleasesTenants(t *testing.T) {
	e, _, path := newEnforcer(t, "kept: {tokens_per_minute: 1000}\ngone: {tokens_per_minute: 1000}\n"+
		"changed: {tokens_per_minute: 1000}\n", nil)
	run(t, e)
	for _, name := range []string{"kept", "gone", "changed"} {
		l, ref := e.Admit(name, 1000)
		if ref != nil {
			t.Fatal(ref)
		}
		l.Finish(1000)
	}
	if n := e.Tenants(); n != 3 {
		t.Fatalf("%d tenants held, want 3", n)
	}
	if err := os.WriteFile(path, []byte("kept: {tokens_per_minute: 1000}\nchanged: {tokens_per_minute: 1500}\n"),
		0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return e.Tenants() == 1 })
	if used, _ := e.Used("kept"); used != 1000 {
		t.Fatalf("kept tenant charged %d, want its 1000", used)
	}
	if l, ref := e.Admit("changed", 1500); ref != nil {
		t.Fatalf("a tenant with new limits did not start afresh: %+v", ref)
	} else {
		l.Refund()
	}
	if _, ref := e.Admit("kept", 1); ref == nil {
		t.Fatal("the kept tenant's counters were released")
	}
}

// run runs e until the test ends.
func run(t *testing.T, e *tenantlimits.Enforcer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// reloadErrors is the value of the reload error counter.
func reloadErrors(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchyard_gateway_tenant_limits_reload_errors_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no reload error counter")
	return 0
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func BenchmarkAdmitFinish(b *testing.B) {
	path := filepath.Join(b.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, []byte("\"*\": {tokens_per_minute: 1000000000000, requests_per_second: 1000000, "+
		"max_concurrent: 1000000}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg := tenantlimits.DefaultConfig()
	cfg.Path = path
	e, err := tenantlimits.New(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, ref := e.Admit("acme", 500)
			if ref == nil {
				l.Finish(400)
			}
		}
	})
}
