package proxy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/poll"
)

// TestResponsesRoute sends Responses API requests through the proxy: the body reaches the pod
// unchanged (no stream_options is added: the Responses API has none), the answer passes
// through with the decision headers, and the meter takes the first token at the first delta,
// not at response.created, and the usage from response.completed.
func TestResponsesRoute(t *testing.T) {
	const created = 200 * time.Millisecond // the pod's wait between response.created and the first delta
	gotBody := make(chan string, 2)
	up := upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody <- r.URL.Path + " " + string(b)
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(
				w,
				`{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","role":"assistant",`+
					`"content":[{"type":"output_text","text":"hi there","annotations":[]}]}],`+
					`"usage":{"input_tokens":11,"input_tokens_details":{"cached_tokens":4},"output_tokens":2,"total_tokens":13}}`,
			)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(
			w,
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\n",
		)
		w.(http.Flusher).Flush()
		time.Sleep(created)
		fmt.Fprint(
			w,
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
		)
		w.(http.Flusher).Flush()
		fmt.Fprint(
			w,
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" there\"}\n\n"+
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\","+
				"\"usage\":{\"input_tokens\":12,\"input_tokens_details\":{\"cached_tokens\":8},\"output_tokens\":2,\"total_tokens\":14}}}\n\n",
		)
	})
	e := newEnv(t, nil, up)
	tests := []struct {
		name, body       string
		sse              bool
		prompt, cached   int
		minTTFT, maxTTFT time.Duration
	}{
		{
			"streaming",
			`{"model":"llama","stream":true,"instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hello"}]}],"max_output_tokens":8}`,
			true,
			12,
			8,
			created,
			time.Minute,
		},
		{"not streaming", `{"model":"lora-a","input":"hello","max_output_tokens":8}`, false, 11, 4, 0, time.Minute},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, e.url+"/v1/responses", tt.body, nil)
			defer resp.Body.Close()
			answer, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "there") {
				t.Fatalf("status %d, answer %q", resp.StatusCode, answer)
			}
			if got := <-gotBody; got != "/v1/responses "+tt.body {
				t.Fatalf("the pod got %q, want the body unchanged", got)
			}
			for _, h := range []string{contract.HeaderCluster, contract.HeaderRegion, contract.HeaderEndpoint} {
				if resp.Header.Get(h) == "" {
					t.Errorf("answer without %s", h)
				}
			}
			poll.Until(t, waitTimeout, func() bool { return len(e.hooks.posts()) == i+1 }, "post-response hook")
			info := e.hooks.posts()[i]
			if info.Status != 200 || info.OutputTokens != 2 || info.PromptTokens != tt.prompt || info.CachedTokens != tt.cached {
				t.Fatalf("response info = %+v", info)
			}
			if info.TTFT < tt.minTTFT || info.TTFT > tt.maxTTFT || info.TTFT <= 0 {
				t.Fatalf("TTFT %v, want at least %v (the first delta, not response.created)", info.TTFT, tt.minTTFT)
			}
		})
	}
	if req := e.sched.seen[0]; req.Model != "llama" || req.PromptTokens == 0 {
		t.Errorf("scheduled request = %+v", req)
	}
}

// TestNoRoute checks that a request for a route the proxy does not serve gets an OpenAI-style
// JSON error (404, or 405 for a served path and another method), is counted, and never reaches
// a pod.
func TestNoRoute(t *testing.T) {
	reached := make(chan struct{}, 8)
	up := upstream(t, func(http.ResponseWriter, *http.Request) { reached <- struct{}{} })
	e := newEnv(t, nil, up)
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodPost, "/v1/nope", 404, ""},
		{http.MethodGet, "/v1/responses/resp_1", 404, ""},
		{http.MethodPost, "/", 404, ""},
		{http.MethodDelete, "/v1/responses", 405, "POST"},
		{http.MethodGet, "/v1/chat/completions", 405, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, e.url+tt.path, strings.NewReader(`{"model":"llama","input":"x"}`))
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
			if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&got); err != nil {
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
	want := `# HELP switchyard_gateway_no_route_requests_total Requests refused because the HTTP proxy serves no such route, by status: 404 (unknown path) or 405 (a path served with another method).
# TYPE switchyard_gateway_no_route_requests_total counter
switchyard_gateway_no_route_requests_total{code="404"} 3
switchyard_gateway_no_route_requests_total{code="405"} 2
`
	if err := testutil.GatherAndCompare(
		e.reg,
		strings.NewReader(want),
		"switchyard_gateway_no_route_requests_total",
	); err != nil {
		t.Error(err)
	}
	select {
	case <-reached:
		t.Fatal("a request without a route reached a pod")
	default:
	}
}
