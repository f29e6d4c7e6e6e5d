package frontdoor_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// TestResponsesRoute checks that POST /v1/responses is routed as chat is: by the body's model,
// under the model's policy, to the same path on the chosen gateway with the body unchanged, and
// the answer carries the decision headers.
func TestResponsesRoute(t *testing.T) {
	f := newFleet(t, clusterSpec{"east", "us-east-1", 0.1, 0}, clusterSpec{"eu", "eu-west-1", 0.1, 0})
	url := router(t, f, policies{"llama": {OverflowThreshold: 0.8, AllowedRegions: []string{"eu-west-1"}}})
	body := `{"model":"llama","stream":true,"instructions":"be brief","input":[{"role":"user","content":"hello"}],"max_output_tokens":8}`
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := *f.last.Load(); got != "/v1/responses "+body {
		t.Fatalf("the gateway got %q, want the path and body unchanged", got)
	}
	// The residency policy holds: the local cluster is not allowed.
	if c, r := resp.Header.Get(
		contract.HeaderCluster,
	), resp.Header.Get(
		contract.HeaderRoute,
	); c != "eu" ||
		r != string(routing.RouteOverflow) {
		t.Fatalf("served by %q, route %q; want eu, overflow", c, r)
	}
	if f.hits["east"].Load() != 0 {
		t.Fatal("the request reached a cluster its policy does not allow")
	}
}

// TestNoRoute checks that a request for a route the front door does not serve gets an
// OpenAI-style JSON error (404, or 405 for a served path and another method) and is counted.
func TestNoRoute(t *testing.T) {
	f := newFleet(t, clusterSpec{"east", "us-east-1", 0.1, 0})
	reg := prometheus.NewRegistry()
	url := routerWith(t, f, nil, routing.Options{}, reg)
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPost, "/v1/nope", 404, ""},
		{http.MethodGet, "/v1/responses/resp_1", 404, ""},
		{http.MethodGet, "/", 404, ""},
		{http.MethodGet, "/v1/responses", 405, "POST"},
		{http.MethodPut, "/v1/models", 405, "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, url+tt.path, strings.NewReader(`{"model":"llama","input":"x"}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Error struct {
					Message, Type string
					Code          *string
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatalf("status %d: not a JSON error: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != tt.status || got.Error.Type != "invalid_request_error" ||
				!strings.Contains(got.Error.Message, tt.path) ||
				got.Error.Code != nil ||
				resp.Header.Get("Allow") != tt.allow {
				t.Fatalf("status %d (Allow %q), error %+v", resp.StatusCode, resp.Header.Get("Allow"), got.Error)
			}
		})
	}
	want := `# HELP switchyard_router_no_route_requests_total Requests refused because the router serves no such route, by status: 404 (unknown path) or 405 (a path served with another method).
# TYPE switchyard_router_no_route_requests_total counter
switchyard_router_no_route_requests_total{code="404"} 3
switchyard_router_no_route_requests_total{code="405"} 2
`
	if err := testutil.GatherAndCompare(
		reg,
		strings.NewReader(want),
		"switchyard_router_no_route_requests_total",
	); err != nil {
		t.Error(err)
	}
	if f.hits["east"].Load() != 0 {
		t.Fatal("a request without a route reached a gateway")
	}
}
