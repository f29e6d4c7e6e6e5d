package frontdoor_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract/body"
	"github.com/switchyard-dev/switchyard/contract/poll"
	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// TestBodyBudget is the router's defence against stalled uploads: a body that declares 30 MB
// and sends 5 KB holds 8 KiB, not 30 MB; with the in-flight body budget spent a request is
// answered 503 with Retry-After and an OpenAI-style error, counted as body_budget; and when
// the stalled upload goes away its budget comes back and requests are routed again.
func TestBodyBudget(t *testing.T) {
	budget := body.NewBudget(12 << 10)
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.Bodies = "us-east-1", budget
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(
		frontdoor.New(cfg, benchTable("http://127.0.0.1:1"), policies{}, &recordTargets{}, nil, frontdoor.NewMetrics(reg)).
			Handler(),
	)
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(
		conn,
		"POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: 30000000\r\n\r\n%s",
		strings.Repeat("x", 5000),
	)
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 8<<10 }, "the stalled upload's buffer")

	req := `{"model":"llama","prompt":"` + strings.Repeat("y", 4970) + `"}`
	resp, got := post(t, srv.URL, req)
	var answer struct {
		Error struct{ Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &answer); err != nil || resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get(
			"Retry-After",
		) != "1" || answer.Error.Code != "body_budget_exhausted" || answer.Error.Type != "service_unavailable" {
		t.Fatalf(
			"with the budget spent: %d, Retry-After %q, %s; want 503, 1, body_budget_exhausted",
			resp.StatusCode,
			resp.Header.Get("Retry-After"),
			got,
		)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP switchyard_router_requests_total Requests handled by the router, by model and outcome (local, overflow, retry, not_found, not_allowed, policy_unavailable, no_room, bad_request, too_large, body_budget, cancelled, truncated); body_budget: the in-flight body budget (--max-inflight-body-bytes) was spent, 503; truncated: the answer started and its body from the gateway broke.
# TYPE switchyard_router_requests_total counter
switchyard_router_requests_total{model="other",outcome="body_budget"} 1
`), "switchyard_router_requests_total"); err != nil {
		t.Fatal(err)
	}

	_ = conn.Close()
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the stalled upload's budget back")
	if resp, got := post(t, srv.URL, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the stalled upload ended: %d %s", resp.StatusCode, got)
	}
	poll.Until(t, waitTimeout, func() bool { return budget.InUse() == 0 }, "the routed request's budget back")
}

// TestBodyBudgetGauges checks the gauges RegisterBodyBudget adds follow the budget.
func TestBodyBudgetGauges(t *testing.T) {
	budget := body.NewBudget(1 << 20)
	reg := prometheus.NewRegistry()
	if err := frontdoor.RegisterBodyBudget(reg, budget); err != nil {
		t.Fatal(err)
	}
	if err := budget.Reserve(4096); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP switchyard_router_inflight_body_budget_bytes The in-flight request body budget (--max-inflight-body-bytes): beyond it bodies are refused with 503.
# TYPE switchyard_router_inflight_body_budget_bytes gauge
switchyard_router_inflight_body_budget_bytes 1.048576e+06
# HELP switchyard_router_inflight_body_bytes Bytes of request-body buffers held now, reserved from the in-flight body budget.
# TYPE switchyard_router_inflight_body_bytes gauge
switchyard_router_inflight_body_bytes 4096
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// TestBodyOverLimit checks a body over MaxBodyBytes is a 413, declared or found while reading.
func TestBodyOverLimit(t *testing.T) {
	cfg := frontdoor.DefaultConfig()
	cfg.Region, cfg.MaxBodyBytes, cfg.Bodies = "us-east-1", 1000, body.NewBudget(1<<20)
	h := frontdoor.New(cfg, benchTable("http://127.0.0.1:1"), policies{}, &recordTargets{}, nil, nil).Handler()
	for _, declared := range []bool{true, false} {
		b := `{"model":"llama","prompt":"` + strings.Repeat("z", 2000) + `"}`
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", io.NopCloser(strings.NewReader(b)))
		if !declared {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "request_too_large") {
			t.Fatalf("declared=%v: %d %s, want 413", declared, rec.Code, rec.Body)
		}
	}
	if cfg.Bodies.InUse() != 0 {
		t.Fatalf("refused bodies hold %d bytes", cfg.Bodies.InUse())
	}
}

// waitTimeout bounds every wait for a condition in these tests (poll.Until): generous, as a
// busy machine is slow.
const waitTimeout = 10 * time.Second
