package frontdoor_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/ratelimit"

	"github.com/switchyard-dev/switchyard/global-router/internal/clustertable"
	"github.com/switchyard-dev/switchyard/global-router/internal/forward"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// directory is a Tenants of fixed keys and limits.
type directory struct {
	keys   map[[32]byte]string
	limits map[string]ratelimit.Limits
}

func (d directory) HasAPIKeys() bool { return len(d.keys) > 0 }
func (d directory) ByKeyDigest(k [32]byte) (string, bool) {
	n, ok := d.keys[k]
	return n, ok
}
func (d directory) Limits(t string) (ratelimit.Limits, bool, bool) {
	l, ok := d.limits[t]
	return l, ok, t == "broken"
}

// usageForwarder answers every request 200 with a JSON body reporting usage, after gate (when
// set) is closed or the request's context is done; it records the tenant and Authorization
// headers it was sent.
type usageForwarder struct {
	mu      sync.Mutex
	tenants []string
	auth    []string
	usage   string
	gate    chan struct{}
	started chan struct{}
}

func (f *usageForwarder) Forward(
	w http.ResponseWriter,
	r *http.Request,
	_ []byte,
	_ []forward.Target,
	_ forward.Retarget,
) error {
	f.mu.Lock()
	f.tenants = append(f.tenants, r.Header.Get(contract.HeaderTenant))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"choices":[{"text":"hi"}],"usage":` + f.usage + `}`))
	return nil
}

func tenantServer(t *testing.T, dir directory, fwd *usageForwarder, reg prometheus.Registerer) http.Handler {
	t.Helper()
	f := newFleet(t, clusterSpec{name: "east", region: "us-east-1", kvUsed: 0.1})
	tb := clustertable.New(clustertable.Config{Region: "us-east-1"}, f, nil)
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.QueueWait = "us-east-1", 0
	cfg.Tenants, cfg.Limiter = dir, ratelimit.New(ratelimit.DefaultConfig())
	return frontdoor.New(cfg, tb, policies{}, fwd, nil, frontdoor.NewMetrics(reg)).Handler()
}

func send(h http.Handler, body string, header map[string]string) *httptest.ResponseRecorder {
	return sendCtx(context.Background(), h, body, header)
}

func sendCtx(ctx context.Context, h http.Handler, body string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/completions", strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const smallBody = `{"model":"llama","prompt":"abcd","max_tokens":10}`

func TestAPIKeysIdentifyTheTenant(t *testing.T) {
	dir := directory{
		keys:   map[[32]byte]string{sha256.Sum256([]byte("sk-acme")): "acme"},
		limits: map[string]ratelimit.Limits{},
	}
	fwd := &usageForwarder{usage: `{"prompt_tokens":1,"completion_tokens":1}`}
	reg := prometheus.NewRegistry()
	h := tenantServer(t, dir, fwd, reg)
	tests := []struct {
		name       string
		header     map[string]string
		wantStatus int
	}{
		{"no key", nil, http.StatusUnauthorized},
		{"not bearer", map[string]string{"Authorization": "Basic c2stYWNtZQ=="}, http.StatusUnauthorized},
		{"unknown key", map[string]string{"Authorization": "Bearer sk-other"}, http.StatusUnauthorized},
		{"key prefix", map[string]string{"Authorization": "Bearer sk-acm"}, http.StatusUnauthorized},
		{"spoofed tenant without a key", map[string]string{contract.HeaderTenant: "acme"}, http.StatusUnauthorized},
		{"valid key", map[string]string{"Authorization": "Bearer sk-acme"}, http.StatusOK},
		{
			"valid key, spoofed tenant",
			map[string]string{"Authorization": "bearer sk-acme", contract.HeaderTenant: "victim"},
			http.StatusOK,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := send(h, smallBody, tc.header)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus == http.StatusUnauthorized && !strings.Contains(rec.Body.String(), `"code":"invalid_api_key"`) {
				t.Fatalf("body %s, want code invalid_api_key", rec.Body)
			}
		})
	}
	fwd.mu.Lock()
	defer fwd.mu.Unlock()
	for i, tenant := range fwd.tenants {
		if tenant != "acme" || fwd.auth[i] != "" {
			t.Fatalf("forwarded request %d: tenant %q, Authorization %q; want acme and none", i, tenant, fwd.auth[i])
		}
	}
	if got := counterValue(t, reg, "switchyard_router_tenant_refused_total", "limit", "invalid_api_key"); got != 5 {
		t.Fatalf("invalid_api_key refusals counted %v, want 5", got)
	}
}

func TestTenantConcurrencyReleasedOnEndAndCancel(t *testing.T) {
	dir := directory{limits: map[string]ratelimit.Limits{"acme": {MaxConcurrent: 1}}}
	fwd := &usageForwarder{
		usage:   `{"prompt_tokens":1,"completion_tokens":1}`,
		gate:    make(chan struct{}),
		started: make(chan struct{}, 4),
	}
	h := tenantServer(t, dir, fwd, nil)
	acme := map[string]string{contract.HeaderTenant: "acme"}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- sendCtx(ctx, h, smallBody, acme).Code }()
	<-fwd.started
	rec := send(h, smallBody, acme)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"code":"rate_limit_exceeded"`) {
		t.Fatalf(
			"second concurrent request: %d %v %s, want 429 rate_limit_exceeded with Retry-After",
			rec.Code,
			rec.Header(),
			rec.Body,
		)
	}
	cancel() // the client goes away: its slot is given back
	<-done
	close(fwd.gate)
	if rec := send(h, smallBody, acme); rec.Code != http.StatusOK {
		t.Fatalf("after the cancelled request: %d %s, want 200", rec.Code, rec.Body)
	}
	if rec := send(h, smallBody, acme); rec.Code != http.StatusOK {
		t.Fatalf("after a finished request: %d %s, want 200", rec.Code, rec.Body)
	}
}

func TestTenantTokensChargedFromUsage(t *testing.T) {
	dir := directory{limits: map[string]ratelimit.Limits{"acme": {TokensPerMinute: 1000}}}
	fwd := &usageForwarder{usage: `{"prompt_tokens":100,"completion_tokens":500}`}
	h := tenantServer(t, dir, fwd, nil)
	acme := map[string]string{contract.HeaderTenant: "acme"}
	if rec := send(h, smallBody, acme); rec.Code != http.StatusOK {
		t.Fatalf("first: %d %s", rec.Code, rec.Body)
	}
	// 600 charged; a request reserving 1 + 500 does not fit.
	rec := send(h, `{"model":"llama","prompt":"abcd","max_tokens":500}`, acme)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("over the token budget: %d %s, want 429 with Retry-After", rec.Code, rec.Body)
	}
	// A small one still fits, and is charged its reported 600: the next is refused.
	if rec := send(h, smallBody, acme); rec.Code != http.StatusOK {
		t.Fatalf("small: %d %s", rec.Code, rec.Body)
	}
	if rec := send(h, smallBody, acme); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("after 1200 reported: %d, want 429", rec.Code)
	}
	// Unlimited and unreadable tenants.
	if rec := send(h, smallBody, map[string]string{contract.HeaderTenant: "other"}); rec.Code != http.StatusOK {
		t.Fatalf("tenant without limits: %d", rec.Code)
	}
	if rec := send(
		h,
		smallBody,
		map[string]string{contract.HeaderTenant: "broken"},
	); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("unreadable tenant: %d, want 503", rec.Code)
	}
}

// FuzzTenantIdentity: whatever Authorization and tenant headers a client sends, the answer is
// 200 only for the one key, and then the forwarded tenant is the key's.
func FuzzTenantIdentity(f *testing.F) {
	f.Add("Bearer sk-acme", "victim")
	f.Add("Bearer ", "")
	f.Add("bearer  sk-acme ", "acme")
	f.Add("Bearer sk-acme\x00", "x")
	dir := directory{
		keys:   map[[32]byte]string{sha256.Sum256([]byte("sk-acme")): "acme"},
		limits: map[string]ratelimit.Limits{},
	}
	fwd := &usageForwarder{usage: `null`}
	h := tenantServer(&testing.T{}, dir, fwd, nil)
	f.Fuzz(func(t *testing.T, auth, tenant string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(smallBody))
		req.Header[http.CanonicalHeaderKey("Authorization")] = []string{auth}
		req.Header[http.CanonicalHeaderKey(contract.HeaderTenant)] = []string{tenant}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := http.StatusUnauthorized
		if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") && strings.TrimSpace(auth[7:]) == "sk-acme" {
			want = http.StatusOK
		}
		if rec.Code != want {
			t.Fatalf("Authorization %q: status %d, want %d", auth, rec.Code, want)
		}
		if want == http.StatusOK && req.Header.Get(contract.HeaderTenant) != "acme" {
			t.Fatalf("forwarded tenant %q, want acme", req.Header.Get(contract.HeaderTenant))
		}
	})
}
