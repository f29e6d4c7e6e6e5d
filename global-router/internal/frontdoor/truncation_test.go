package frontdoor_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/global-router/internal/frontdoor"
)

// cutAnswer starts an answer and breaks it, as a gateway whose pod died mid-answer does (the
// gateway aborts its own answer, see the gateway's proxy): "short" declares a Content-Length it
// does not reach, "reset" resets a JSON answer after its first bytes, "sse" an event stream
// after its first event.
func cutAnswer(w http.ResponseWriter, kind string) {
	switch kind {
	case "short":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "400")
		fmt.Fprint(w, `{"choices":[{"text":"hel`)
		w.(http.Flusher).Flush()
		return // the server ends the stream 360 bytes short of its declared length
	case "reset":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"text":"hel`)
	case "sse":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"hi\"}]}\n\n")
	}
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// cutGateway starts a gateway (HTTP/1.1 and h2c) of cluster east-a whose answers break as
// cutAnswer's kind says, and returns its URL.
func cutGateway(t *testing.T, kind string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Switchyard-Cluster", "east-a")
		w.Header().Set("X-Switchyard-Region", "us-east-1")
		cutAnswer(w, kind)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// An answer that breaks after the router passed its headers on (a gateway's body short of its
// Content-Length, or its stream reset) reaches the client as a failed read, over HTTP/1.1 and
// h2c, never as a clean end; it is counted, and the router keeps serving.
func TestTruncatedAnswerIsAborted(t *testing.T) {
	h2 := &http.Transport{Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true)
	clients := map[string]*http.Client{"http1": {Transport: &http.Transport{}}, "h2c": {Transport: h2}}
	for _, cut := range []string{"short", "reset", "sse"} {
		for proto, client := range clients {
			t.Run(cut+"/"+proto, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				f := newFleet(t, clusterSpec{"east-a", "us-east-1", 0.1, 0})
				(*f.summaries.Load())[0].Summary.GatewayUrl = cutGateway(t, cut)
				url := routerWith(t, f, nil, frontdoor.DefaultConfig().Options, reg)
				resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(okBody))
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Switchyard-Cluster") != "east-a" {
					t.Fatalf(
						"status %d cluster %q, want the gateway's 200 passed on",
						resp.StatusCode,
						resp.Header.Get("X-Switchyard-Cluster"),
					)
				}
				switch {
				case err == nil:
					t.Fatalf("the truncated answer read as complete: %q", body)
				case proto == "http1" && !errors.Is(err, io.ErrUnexpectedEOF):
					t.Fatalf("read error %v, want io.ErrUnexpectedEOF", err)
				case proto == "h2c" && !strings.Contains(err.Error(), "stream error"):
					t.Fatalf("read error %v, want a reset stream", err)
				}
				if cut == "sse" && !strings.Contains(string(body), `"upstream_error"`) {
					t.Errorf("the broken stream carries no error event: %q", body)
				}
				const want = `
# HELP switchyard_router_requests_total Requests handled by the router, by model and outcome (local, overflow, retry, not_found, not_allowed, policy_unavailable, no_room, bad_request, too_large, body_budget, cancelled, truncated); body_budget: the in-flight body budget (--max-inflight-body-bytes) was spent, 503; truncated: the answer started and its body from the gateway broke.
# TYPE switchyard_router_requests_total counter
switchyard_router_requests_total{model="llama",outcome="truncated"} 1
`
				if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_router_requests_total"); err != nil {
					t.Fatal(err)
				}
				// The router keeps serving.
				resp, err = client.Get(url + "/v1/models")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("after a truncation: /v1/models status %d", resp.StatusCode)
				}
			})
		}
	}
}
