package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/switchyard-dev/switchyard/contract/poll"
	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/app"
)

// TestPolicyUnavailableAtStart starts a router whose etcd is unreachable: it never routes with
// the default policy (every region allowed). It is not ready, and by --policy-unavailable it
// either refuses requests (503 policy_unavailable with Retry-After, counted) or keeps them in its
// own region; ExplainRoute reports the same.
func TestPolicyUnavailableAtStart(t *testing.T) {
	tests := []struct {
		mode       string
		wantStatus int
	}{
		{"refuse", http.StatusServiceUnavailable},
		{"local", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			e := newEnv(t)
			r := startRouterUntil(t, e, "router-unloaded-"+tt.mode, func(c *app.Config) {
				c.EtcdEndpoints = []string{"http://" + freeAddr(t)} // nothing listens there
				c.PolicyUnavailable = tt.mode
			}, "/healthz")
			if code, body := get(
				t,
				"http://"+r.cfg.MetricsListen+"/readyz",
			); code != http.StatusServiceUnavailable ||
				!strings.Contains(body, "configuration not loaded") {
				t.Fatalf("/readyz with etcd unreachable = %d %q, want 503 naming the configuration", code, body)
			}
			// Wait until gossip has brought the clusters, so a refusal is the policy's doing.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			waitHTTP(t, "http://"+r.cfg.Listen+"/v1/models", http.StatusOK, r.done)
			if err := poll.Wait(ctx, func(context.Context) error {
				if _, body := get(t, "http://"+r.cfg.Listen+"/v1/models"); !strings.Contains(body, model) {
					return fmt.Errorf("/v1/models = %s", body)
				}
				return nil
			}); err != nil {
				t.Fatalf("waiting for the router to list %s: %v", model, err)
			}
			resp, body := chat(t, r.cfg.Listen)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("request while policies are not loaded: %d %s, want %d", resp.StatusCode, body, tt.wantStatus)
			}
			ex, err := r.admin.ExplainRoute(ctx, connect.NewRequest(&adminv1.ExplainRouteRequest{Model: model}))
			if err != nil {
				t.Fatal(err)
			}
			if tt.mode == "refuse" {
				checkRefusal(t, resp, body)
				if _, m := get(
					t,
					"http://"+r.cfg.MetricsListen+"/metrics",
				); !strings.Contains(
					m,
					`switchyard_router_policy_unavailable_total{reason="not_loaded"} 1`,
				) {
					t.Fatalf("the refusal is not counted as not_loaded:\n%s", m)
				}
				if ex.Msg.GetError() == "" || !strings.Contains(ex.Msg.GetError(), "not loaded") || ex.Msg.GetPolicy() != nil ||
					ex.Msg.GetChosenCluster() != "" {
					t.Fatalf("ExplainRoute while refusing = %v, want an error, no policy and no cluster", ex.Msg)
				}
				return
			}
			if got := resp.Header.Get("X-Switchyard-Cluster"); got != e.preferred {
				t.Fatalf("served by %q, want the local %s", got, e.preferred)
			}
			if p := ex.Msg.GetPolicy(); ex.Msg.GetChosenCluster() != e.preferred ||
				!slices.Equal(p.GetAllowedRegions(), []string{region}) {
				t.Fatalf(
					"ExplainRoute in local mode = %v, want %s chosen under a policy allowing %s only",
					ex.Msg,
					e.preferred,
					region,
				)
			}
		})
	}
}

// checkRefusal checks a 503 policy_unavailable answer.
func checkRefusal(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	var msg struct {
		Error struct {
			Message, Type, Code string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatalf("refusal body %q: %v", body, err)
	}
	if msg.Error.Code != "policy_unavailable" || msg.Error.Type != "service_unavailable" ||
		!strings.Contains(msg.Error.Message, "not loaded") {
		t.Fatalf("refusal = %+v, want code policy_unavailable saying policies are not loaded", msg.Error)
	}
	if resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-Switchyard-Cluster") != "" {
		t.Fatalf("refusal headers %v, want Retry-After and no cluster", resp.Header)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func chat(t *testing.T, addr string) (*http.Response, string) {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"stream":true}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

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
