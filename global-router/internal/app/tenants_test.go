package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// TestTenantLimiterStateReleased: a tenant deleted from etcd, or whose limits change, leaves
// no counters in the router's limiter (switchyard_router_tenant_limiter_tenants falls back),
// and one whose limits changed starts afresh under the new limits.
func TestTenantLimiterStateReleased(t *testing.T) {
	e := newEnv(t)
	r := startRouter(t, e, "router-tenants")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := r.waitChosen(ctx, e.preferred, time.Now()); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("forget-%d", testCounter.Add(1))
	put := func(tpm int64, rev int64) int64 {
		t.Helper()
		resp, err := r.admin.PutTenant(ctx, connect.NewRequest(&adminv1.PutTenantRequest{Tenant: &adminv1.Tenant{
			Name: name, TokensPerMinute: tpm, MaxConcurrent: 10, Revision: rev,
		}}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Msg.GetTenant().GetRevision()
	}
	// held waits until the limiter holds n tenants, sending a request of the tenant while want
	// says the tenant must be admitted (so its counters are created).
	held := func(n int, send bool) {
		t.Helper()
		poll.Until(t, 30*time.Second, func() bool {
			if send {
				if status := tenantChat(t, r.cfg.Listen, name); status != http.StatusOK {
					return false // the tenant's put has not reached the view yet
				}
			}
			return limiterTenants(t, r.cfg.MetricsListen) == n
		}, fmt.Sprintf("the limiter to hold %d tenants", n))
	}

	rev := put(100_000, 0)
	held(1, true)
	rev = put(200_000, rev) // new limits: the counters are released
	held(0, false)
	held(1, true)
	if _, err := r.admin.DeleteTenant(ctx, connect.NewRequest(&adminv1.DeleteTenantRequest{Name: name,
		Revision: rev})); err != nil {
		t.Fatal(err)
	}
	held(0, false)
	if status := tenantChat(t, r.cfg.Listen, name); status != http.StatusOK {
		t.Fatalf("a deleted tenant's request: %d, want 200 (no limits)", status)
	}
	if n := limiterTenants(t, r.cfg.MetricsListen); n != 0 {
		t.Fatalf("a tenant without limits got counters: %d held", n)
	}
}

// tenantChat sends a streamed chat completion as tenant and returns its status.
func tenantChat(t *testing.T, addr, tenant string) int {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"stream":true}`
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Switchyard-Tenant", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

var limiterGauge = regexp.MustCompile(`(?m)^switchyard_router_tenant_limiter_tenants (\d+)$`)

// limiterTenants reads switchyard_router_tenant_limiter_tenants from the metrics port.
func limiterTenants(t *testing.T, metricsAddr string) int {
	t.Helper()
	_, page := get(t, "http://"+metricsAddr+"/metrics")
	m := limiterGauge.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no switchyard_router_tenant_limiter_tenants on /metrics")
	}
	var n int
	_, _ = fmt.Sscan(m[1], &n)
	return n
}
